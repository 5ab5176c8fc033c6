"""What the pytest plugin prints about scenarios: the per-scenario summary table, the
``-v`` description line and live progress of ``vary:`` draws.

Everything here reads what a scenario item put into its report's ``user_properties``
(``loopsim_*`` keys), so it works the same in one process and under xdist, where the
reports reach the controller from the workers. Only the controller prints.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pytest

__all__ = [
    "PLUGIN_NAME",
    "PROGRESS_INI",
    "ScenarioOutput",
    "VaryProgressLine",
    "description_line",
    "progress_for",
    "summary_lines",
]

#: ini key: real seconds between two progress lines of a ``vary:`` file (0: after every
#: draw, negative: never). Real time, not virtual: it is about the person waiting.
PROGRESS_INI = "loopsim_progress_interval"
DEFAULT_PROGRESS_INTERVAL = 5.0
PLUGIN_NAME = "loopsim-output"


def add_ini(parser: pytest.Parser) -> None:
    parser.addini(
        PROGRESS_INI,
        help="real seconds between two progress lines of a long `vary:` scenario "
        f"(default {DEFAULT_PROGRESS_INTERVAL:g}; 0: after every draw; negative: never)",
        default=str(DEFAULT_PROGRESS_INTERVAL),
    )


def _interval(config: pytest.Config) -> float:
    raw = str(config.getini(PROGRESS_INI)).strip()
    try:
        return float(raw)
    except ValueError:
        msg = f"{PROGRESS_INI} = {raw!r}: expected a number of seconds, e.g. 5 (0: every draw)"
        raise pytest.UsageError(msg) from None


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")  # an xdist worker: its output is not shown


def _reporter(config: pytest.Config) -> Any:
    if _is_worker(config):
        return None
    return config.pluginmanager.get_plugin("terminalreporter")


def _suspended(config: pytest.Config) -> contextlib.AbstractContextManager[Any]:
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is None:
        return contextlib.nullcontext()
    return capture.global_and_fixture_disabled()  # type: ignore[no-any-return] # pytest's own


def write_line(config: pytest.Config, text: str) -> None:
    """Write a line to the terminal now, also from inside a running test (capture off)."""
    reporter = _reporter(config)
    if reporter is None:
        return
    with _suspended(config):
        reporter.ensure_newline()
        reporter.write(text)
        # leave the line open, as pytest does after a result: its next write ends it
        # (writing the newline ourselves would leave a blank line before the next item)
        reporter.currentfspath = -2
        reporter.flush()


def write_progress(item: pytest.Item, text: str) -> None:
    """Write a progress note about a running item.

    With ``-v`` it is a line of its own (pytest writes the item's result line again
    below). Without, pytest writes each result letter where the line stands, so the note
    starts the file's line again and the letter follows it: ``x.loopsim.yaml vary 40/200
    draws .``.
    """
    config = item.config
    reporter = _reporter(config)
    if reporter is None:
        return
    if config.get_verbosity() > 0 or not reporter.showfspath:
        write_line(config, f"  {text}")
        return
    path = config.rootpath / item.nodeid.partition("::")[0]
    with _suspended(config):
        reporter.ensure_newline()
        reporter.write(f"{os.path.relpath(path, reporter.startpath)} {text} ")
        reporter.currentfspath = path
        reporter.flush()


# -- vary progress --------------------------------------------------------------------------


class VaryProgressLine:
    """``progress(draws, planned, shrinks)`` for ``run_vary``: writes ``vary 12/200
    draws`` at most once per ``interval`` real seconds, so a long file shows it is alive
    and a fast one prints nothing."""

    def __init__(
        self,
        write: Callable[[str], None],
        interval: float,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.write = write
        self.interval = interval
        self.clock = clock
        self.last = clock()
        self.shown = 0

    def __call__(self, draws: int, planned: int, shrinks: int) -> None:
        now = self.clock()
        if now - self.last < self.interval:
            return
        self.last = now
        self.shown += 1
        self.write(_draws(draws, planned, shrinks))


def _draws(draws: int, planned: int, shrinks: int) -> str:
    text = f"vary {draws}/{planned} draws"
    if shrinks:
        text += f", shrinking the failure ({shrinks} step{'s' if shrinks != 1 else ''})"
    return text


def progress_for(item: pytest.Item) -> VaryProgressLine | None:
    """The progress reporter of one ``vary:`` item (None: quiet, xdist worker, or off)."""
    config = item.config
    interval = _interval(config)
    if interval < 0 or config.get_verbosity() < 0 or _reporter(config) is None:
        return None
    return VaryProgressLine(lambda text: write_progress(item, text), interval)


# -- -v description ----------------------------------------------------------------------------


def description_line(report: pytest.TestReport) -> str | None:
    """The indented description line ``-v`` shows under a scenario's result."""
    if report.when != "call":
        return None
    description = _props(report).get("loopsim_description")
    if not description:
        return None
    return "    " + " ".join(str(description).split())


# -- summary ---------------------------------------------------------------------------------


def _props(report: Any) -> dict[str, Any]:
    return dict(getattr(report, "user_properties", ()) or ())


def scenario_reports(stats: Mapping[str, Iterable[Any]]) -> Iterator[Any]:
    """Each scenario's call report, from the terminal reporter's ``stats``."""
    for reports in stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            if "loopsim_scenario" in _props(report):
                yield report


def _seconds(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    text = f"{float(value):.3f}".rstrip("0").rstrip(".")
    return f"{text or '0'}s"


def _outcome(report: Any, props: Mapping[str, Any]) -> str:
    if report.passed:
        return "passed"
    if report.skipped:
        return "skipped"
    return "invalid" if props.get("loopsim_invalid") else "failed"


def _cells(report: Any) -> list[str]:
    props = _props(report)
    outcome = _outcome(report, props)
    name = str(report.nodeid)
    if outcome == "invalid":
        return [outcome, name, "", "", "", "the file did not load (see the failure above)"]
    iterations = props.get("loopsim_iterations")
    counted = "-" if iterations is None else f"{iterations} iteration{'s' * (iterations != 1)}"
    extra = ""
    if props.get("loopsim_planned"):
        extra = _draws(
            int(props.get("loopsim_draws", 0)),
            int(props["loopsim_planned"]),
            int(props.get("loopsim_shrinks", 0)),
        )
    elif "loopsim_planned" in props:
        extra = "vary: no draws (the file as written failed)"
    return [
        outcome,
        name,
        counted,
        str(props.get("loopsim_stop_reason") or "-"),
        _seconds(props.get("loopsim_elapsed")),
        extra,
    ]


def summary_lines(reports: Iterable[Any]) -> list[str]:
    """One aligned line per scenario, sorted by node id (xdist finishes in any order):
    outcome, scenario, iterations, stop reason, virtual time, and for ``vary:`` the draws."""
    rows = [_cells(report) for report in sorted(reports, key=lambda r: str(r.nodeid))]
    if not rows:
        return []
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    lines = []
    for row in rows:
        if row[0] == "invalid":
            line = f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[5]}"
        else:
            cells = [f"{row[c]:<{widths[c]}}" for c in range(4)]
            cells.append(f"{row[4]:>{widths[4]}} virtual")
            line = "  ".join(cells) + (f"  {row[5]}" if row[5] else "")
        lines.append(line.rstrip())
    return lines


def weak_lines(reports: Iterable[Any]) -> list[str]:
    """What each scenario's expectations leave unchecked, sorted by node id."""
    return [
        str(line)
        for report in sorted(reports, key=lambda r: str(r.nodeid))
        for line in _props(report).get("loopsim_weak", ())
    ]


# -- the hooks ---------------------------------------------------------------------------------


class ScenarioOutput:
    """Registered by the plugin's ``pytest_configure``: the ``-v`` description lines, the
    per-scenario summary and (``note``) a line about a deprecated option, once."""

    def __init__(self, config: pytest.Config, *, note: str | None = None) -> None:
        self.config = config
        self.note = note
        #: scenario snapshots syrupy's clean-up deleted and the plugin wrote back
        self.put_back: list[Any] = []
        _interval(config)  # a bad ini value stops the run before any test, with its name

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # after the terminal reporter wrote the result line (and under xdist, in the
        # controller, as each worker's report arrives)
        if self.config.get_verbosity() < 1:
            return
        line = description_line(report)
        if line is not None:
            write_line(self.config, line)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if _is_worker(self.config):
            return
        if self.note is not None:
            terminalreporter.write_line(self.note)
        if self.put_back:
            names = ", ".join(str(path) for path in self.put_back)
            terminalreporter.write_line(
                f"loopsim: syrupy took {len(self.put_back)} scenario snapshot(s) for unused "
                f"snapshots and deleted them; they are written back: {names}"
            )
        if self.config.get_verbosity() < 0:
            return
        lines = summary_lines(scenario_reports(terminalreporter.stats))
        if lines:
            count = len(lines)
            terminalreporter.write_sep("=", f"loopsim: {count} scenario{'s' * (count != 1)}")
            for line in lines:
                terminalreporter.write_line(line)
        weak = weak_lines(scenario_reports(terminalreporter.stats))
        if weak:
            terminalreporter.write_line(
                f"loopsim: {len(weak)} weak expectation(s) (strict: true makes them failures):"
            )
            for line in weak:
                terminalreporter.write_line(f"  {line}")
