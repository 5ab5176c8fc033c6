"""loopsim's pytest plugin (entry point ``pytest11``): scenario files as tests, and more.

* ``*.loopsim.yaml`` (``.yml``, ``.json``) files are collected as one test item each; a
  failure shows the scenario file and line of each failing expectation, the seed and
  the tail of the transcript — an invalid file shows its located ``ScenarioError``.
* Options: ``--loopsim-seed=N`` (override every scenario's seed),
  ``--loopsim-backend=asyncio|trio`` (override the backend),
  ``--loopsim-transcripts=DIR`` (write every scenario's transcript there; failures
  always get theirs written under ``.loopsim/transcripts`` unless this is set),
  ``--loopsim-update-snapshots`` (write ``expect: {transcript: snapshot}`` files
  instead of comparing; a missing snapshot is otherwise a failure),
  ``--loopsim-reproducers=DIR`` (where a failing ``vary:`` draw is written as a concrete
  scenario file plus its transcript; default ``<rootdir>/.loopsim/reproducers``).
* A scenario with a ``vary:`` block runs as a hypothesis property test: the file as
  written, then draws (``vary_settings.max_examples``, else the active hypothesis
  profile; seeded with the scenario seed in CI, under a derandomizing profile, or with
  ``--loopsim-seed``). A failure is shrunk; its report shows the draw and the reproducer.
* Fixture ``loopsim_clock``: a fresh :class:`~loopsim.VirtualClock` per test.
* Marker ``@pytest.mark.loopsim(backend="asyncio")``: run an ``async def`` test on the
  virtual clock (``backend=("asyncio", "trio")`` runs it on both).

The plugin follows the shape of pytest's "non-Python tests" example and the Hypothesis
and anyio plugins: option names are module constants, imports are lazy.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ._clock import VirtualClock
    from ._scenario import ScenarioResult

__all__ = [
    "BACKEND_OPTION",
    "ENGINE_OPTION",
    "REPORT_OPTION",
    "REPRODUCERS_OPTION",
    "SCENARIO_SUFFIXES",
    "SEED_OPTION",
    "TRANSCRIPTS_OPTION",
    "UPDATE_SNAPSHOTS_OPTION",
    "ScenarioFailedError",
    "ScenarioFile",
    "ScenarioItem",
]

SEED_OPTION = "--loopsim-seed"
BACKEND_OPTION = "--loopsim-backend"
ENGINE_OPTION = "--loopsim-engine"
TRANSCRIPTS_OPTION = "--loopsim-transcripts"
UPDATE_SNAPSHOTS_OPTION = "--loopsim-update-snapshots"
REPRODUCERS_OPTION = "--loopsim-reproducers"
REPORT_OPTION = "--loopsim-report"
SCENARIO_SUFFIXES = (".loopsim.yaml", ".loopsim.yml", ".loopsim.json")
DEFAULT_FAILURE_TRANSCRIPTS = Path(".loopsim") / "transcripts"
DEFAULT_REPRODUCERS = Path(".loopsim") / "reproducers"
TAIL_EVENTS = 12


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loopsim", "loopsim scenarios and virtual time")
    group.addoption(
        SEED_OPTION,
        type=int,
        default=None,
        metavar="N",
        help="run every scenario with this seed instead of its own",
    )
    group.addoption(
        BACKEND_OPTION,
        choices=("asyncio", "trio"),
        default=None,
        help="run every scenario on this backend instead of its own",
    )
    group.addoption(
        ENGINE_OPTION,
        choices=("loopsim", "agent_framework", "both"),
        default=None,
        help="run every scenario on this engine instead of its own; `both` runs each "
        "scenario on both engines, checks each, and reports the first divergence",
    )
    group.addoption(
        TRANSCRIPTS_OPTION,
        default=None,
        metavar="DIR",
        help="write each scenario's transcript (<name>.transcript.json) into DIR",
    )
    group.addoption(
        REPRODUCERS_OPTION,
        default=None,
        metavar="DIR",
        help="write the reproducer of each failing `vary:` draw (a concrete scenario file "
        "and its transcript) into DIR instead of <rootdir>/.loopsim/reproducers",
    )
    group.addoption(
        UPDATE_SNAPSHOTS_OPTION,
        action="store_true",
        default=False,
        help="write the transcript snapshot of every scenario with `expect: {transcript: "
        "snapshot}` (__snapshots__/<scenario>.transcript.txt) instead of comparing",
    )

    group.addoption(
        REPORT_OPTION,
        default=None,
        metavar="FILE",
        help="write a self-contained HTML report of every scenario run (suite table, "
        "timelines, evaluator decisions, model calls, failures) to FILE",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption(REPORT_OPTION, None) and not hasattr(config, "workerinput"):
        from ._report._pytest import ReportCollector  # noqa: PLC0415 - only when asked

        config.pluginmanager.register(
            ReportCollector(config.getoption(REPORT_OPTION)), "loopsim-report"
        )
    config.addinivalue_line(
        "markers",
        "loopsim(backend='asyncio', seed=0, wall_clock=True): run this async test on "
        "loopsim's virtual clock (backend may be 'asyncio', 'trio' or a sequence of both; "
        "wall_clock=False leaves datetime.now()/time.time() real)",
    )
    _block_looptime_without_pytest_asyncio(config)


def _block_looptime_without_pytest_asyncio(config: pytest.Config) -> None:
    # looptime's pytest plugin (installed with the bench extra) fails every fixture setup
    # when pytest-asyncio is absent (looptime 0.9 reads that plugin's module unguarded);
    # it has nothing to patch then, so loopsim's runs leave it out.
    manager = config.pluginmanager
    if manager.getplugin("asyncio") is None and manager.has_plugin("looptime_plugin"):
        manager.set_blocked("looptime_plugin")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SCENARIO_SUFFIXES):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """A scenario file: one item. Loading happens when the item runs, so an invalid file
    is a failing test with its located message, not a collection error."""

    def collect(self) -> Iterator[pytest.Item]:
        name = self.path.name
        for suffix in SCENARIO_SUFFIXES:
            name = name.removesuffix(suffix)
        yield ScenarioItem.from_parent(self, name=name)


class ScenarioFailedError(AssertionError):
    """A scenario ran and some expectation or invariant failed."""

    def __init__(self, result: ScenarioResult, transcript_path: Path | None) -> None:
        self.result = result
        self.transcript_path = transcript_path
        super().__init__(f"scenario {result.name!r} failed")


class ScenarioStepWarning(UserWarning):
    """A scenario step changed nothing (``strict: true`` in the file makes it a failure)."""


def _warn_unchanged_steps(result: ScenarioResult) -> None:
    """Report each step of ``result`` that changed nothing as a pytest warning."""
    for warning in result.warnings:
        warnings.warn_explicit(
            ScenarioStepWarning(warning.render(None)),
            ScenarioStepWarning,
            filename=str(result.path or result.name),
            lineno=warning.line or 0,
        )


class ScenarioItem(pytest.Item):
    """One scenario file run as a test."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.user_properties.append(("loopsim_scenario", self.name))

    def runtest(self) -> None:
        from ._errors import ScenarioError  # noqa: PLC0415 - lazy: keep pytest startup light
        from ._scenario import load_scenario, run_scenario  # noqa: PLC0415

        config = self.config
        try:
            loaded = load_scenario(self.path, rootdir=self.config.rootpath)
        except ScenarioError:
            self.user_properties.append(("loopsim_invalid", True))
            raise
        options: dict[str, Any] = {
            "seed": config.getoption(SEED_OPTION),
            "backend": config.getoption(BACKEND_OPTION),
            "update_snapshots": bool(config.getoption(UPDATE_SNAPSHOTS_OPTION)),
            "engine": config.getoption(ENGINE_OPTION),
        }
        written: Path | None = None
        if loaded.scenario.vary:
            from ._scenario import run_vary, write_reproducer  # noqa: PLC0415

            if options["seed"] is not None:
                options["seeded"] = True  # --loopsim-seed also seeds hypothesis
            vary = run_vary(loaded, **options)
            result = vary.result
            self.user_properties.append(("loopsim_examples", vary.examples))
            if vary.document is not None:
                folder = config.getoption(REPRODUCERS_OPTION)
                target = (
                    Path(folder) if folder is not None else config.rootpath / DEFAULT_REPRODUCERS
                )
                result.reproducer = write_reproducer(loaded, result, vary.document, target)
                written = target / f"{result.name}.transcript.json"
        else:
            result = run_scenario(loaded, **options)
        self.user_properties.append(("loopsim_elapsed", result.elapsed))
        if config.getoption(REPORT_OPTION, None):
            from ._report import entry_from_result, entry_to_dict  # noqa: PLC0415

            entry = entry_from_result(result, description=loaded.scenario.description or "")
            self.user_properties.append(("loopsim_report", entry_to_dict(entry)))
        _warn_unchanged_steps(result)
        folder = config.getoption(TRANSCRIPTS_OPTION)
        if folder is not None:
            written = result.write_transcript(Path(folder))
        if not result.passed:
            if written is None:
                written = result.write_transcript(config.rootpath / DEFAULT_FAILURE_TRANSCRIPTS)
            raise ScenarioFailedError(result, written)
        _report_engines(result)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        from ._errors import ScenarioError  # noqa: PLC0415

        error = excinfo.value
        if isinstance(error, ScenarioError):
            lines = [f"invalid scenario file: {error}"]
            if error.expected:
                lines.append(f"  expected: {error.expected}")
            return "\n".join(lines)
        if isinstance(error, ScenarioFailedError):
            return error.result.report(tail=TAIL_EVENTS, transcript_path=error.transcript_path)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"scenario {self.name}"


# -- fixtures and the marker ------------------------------------------------------------------


@pytest.fixture
def loopsim_clock(request: pytest.FixtureRequest) -> VirtualClock:
    """A fresh virtual clock (seeded by ``--loopsim-seed`` when given, else 0); inside its
    runs ``datetime.now()``/``time.time()`` follow it."""
    from ._clock import VirtualClock  # noqa: PLC0415

    seed = request.config.getoption(SEED_OPTION)
    return VirtualClock(seed=0 if seed is None else seed)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    marker = pyfuncitem.get_closest_marker("loopsim")
    if marker is None:
        return None
    function = pyfuncitem.obj
    if not inspect.iscoroutinefunction(function):
        msg = f"@pytest.mark.loopsim needs an async def test; {pyfuncitem.name} is not one"
        raise TypeError(msg)
    from ._clock import VirtualClock  # noqa: PLC0415

    backend = marker.kwargs.get("backend", "asyncio")
    backends = (backend,) if isinstance(backend, str) else tuple(backend)
    wall_clock = bool(marker.kwargs.get("wall_clock", True))
    seed = marker.kwargs.get("seed")
    if seed is None:
        seed = pyfuncitem.config.getoption(SEED_OPTION) or 0
    names = pyfuncitem._fixtureinfo.argnames
    kwargs: dict[str, Any] = {name: pyfuncitem.funcargs[name] for name in names}
    for one in backends:
        clock: VirtualClock | None = kwargs.get("loopsim_clock")
        if clock is None or len(backends) > 1:
            clock = VirtualClock(seed=seed, wall_clock=wall_clock)
            if "loopsim_clock" in kwargs:
                kwargs["loopsim_clock"] = clock
        clock.run(functools.partial(function, **kwargs), backend=one)
    return True


def _report_engines(result: ScenarioResult) -> None:
    """``--loopsim-engine both``: a comparison that could not be made, or a divergence the
    file declares as known, is reported as such (skip / xfail with the reason), never as a
    plain pass."""
    if result.not_compared is not None:
        pytest.skip(f"engines not compared: {result.not_compared} (the other engine passed)")
    if result.divergence is not None:
        pytest.xfail(result.divergence)
