"""loopsim's pytest plugin (entry point ``pytest11``): scenario files as tests, and more.

* ``*.loopsim.yaml`` (``.yml``, ``.json``) files are collected as one test item each; a
  failure shows the scenario file and line of each failing expectation, the seed and
  the tail of the transcript — an invalid file shows its located ``ScenarioError``.
* Options: ``--loopsim-seed=N`` (override every scenario's seed),
  ``--loopsim-backend=asyncio|trio`` (override the backend),
  ``--loopsim-transcripts=DIR`` (write every scenario's transcript there; failures
  always get theirs written under ``.loopsim/transcripts`` unless this is set),
  ``--snapshot-update`` (write ``expect: {transcript: snapshot}`` files instead of
  comparing; a missing snapshot is otherwise a failure; with syrupy installed it is
  syrupy's flag and updates both; ``--loopsim-update-snapshots`` is its deprecated alias),
  ``--loopsim-max-examples=N`` (at most N draws per ``vary:`` scenario),
  ``--loopsim-reproducers=DIR`` (where a failing ``vary:`` draw is written as a concrete
  scenario file plus its transcript; default ``<rootdir>/.loopsim/reproducers``).
* ``--loopsim-record-mode=none|once|new_episodes|all``: cassettes (record a real model
  once, replay it). A scenario with a ``model:`` agent replays
  ``cassettes/<scenario>.transcript.json`` next to it (in mode ``none`` a missing one
  fails, saying how to record it); the ``loopsim_cassette`` fixture does it for tests.
* A scenario with a ``vary:`` block runs as a hypothesis property test: the file as
  written, then draws (``vary_settings.max_examples``, else the active hypothesis
  profile; seeded with the scenario seed in CI, under a derandomizing profile, or with
  ``--loopsim-seed``). A failure is shrunk; its report shows the draw and the reproducer.
* Output: ``-v`` shows each scenario's description under its result; a summary section
  has one line per scenario (outcome, iterations, stop reason, virtual time, draws); a
  long ``vary:`` file prints ``vary 40/200 draws`` lines (ini ``loopsim_progress_interval``
  seconds apart, default 5; not under ``-q`` or in xdist workers).
* Fixture ``loopsim_clock``: a fresh :class:`~loopsim.VirtualClock` per test.
* Marker ``@pytest.mark.loopsim(backend="asyncio")``: run an ``async def`` test on the
  virtual clock (``backend=("asyncio", "trio")`` runs it on both).

The plugin follows the shape of pytest's "non-Python tests" example and the Hypothesis
and anyio plugins: option names are module constants, imports are lazy.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import _pytest_output

if TYPE_CHECKING:
    from ._clock import VirtualClock
    from ._scenario import ScenarioResult

__all__ = [
    "BACKEND_OPTION",
    "ENGINE_OPTION",
    "MAX_EXAMPLES_OPTION",
    "RECORD_MODE_OPTION",
    "REPORT_OPTION",
    "REPRODUCERS_OPTION",
    "SCENARIO_SUFFIXES",
    "SEED_OPTION",
    "SNAPSHOT_UPDATE_OPTION",
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
#: The one update flag (syrupy's name; syrupy registers it when installed, loopsim otherwise).
SNAPSHOT_UPDATE_OPTION = "--snapshot-update"
MAX_EXAMPLES_OPTION = "--loopsim-max-examples"
RECORD_MODE_OPTION = "--loopsim-record-mode"
SCENARIO_SUFFIXES = (".loopsim.yaml", ".loopsim.yml", ".loopsim.json")
DEFAULT_FAILURE_TRANSCRIPTS = Path(".loopsim") / "transcripts"
DEFAULT_REPRODUCERS = Path(".loopsim") / "reproducers"
TAIL_EVENTS = 12


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loopsim", "loopsim scenarios and virtual time")
    _add_record_mode_option(group)
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
        help=f"deprecated alias of {SNAPSHOT_UPDATE_OPTION}",
    )
    group.addoption(
        REPORT_OPTION,
        default=None,
        metavar="FILE",
        help="write a self-contained HTML report of every scenario run (suite table, "
        "timelines, evaluator decisions, model calls, failures) to FILE",
    )
    _add_output_options(group)
    _pytest_output.add_ini(parser)


def _positive(text: str) -> int:
    import argparse  # noqa: PLC0415 - only for a bad option value

    number = int(text) if text.strip().lstrip("-").isdigit() else 0
    if number < 1:
        msg = f"expected a whole number >= 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return number


def _add_output_options(group: Any) -> None:
    group.addoption(
        MAX_EXAMPLES_OPTION,
        type=_positive,
        default=None,
        metavar="N",
        help="run at most N hypothesis draws per `vary:` scenario (a cap: fewer when the "
        "file's vary_settings.max_examples or the hypothesis profile asks for fewer)",
    )


def _add_snapshot_update(config: pytest.Config, parser: pytest.Parser) -> None:
    """Register ``--snapshot-update`` unless syrupy does: then it is one flag that updates
    syrupy's snapshots and the scenarios' (two registrations would be an error)."""
    if config.pluginmanager.hasplugin("syrupy"):
        return
    parser.getgroup("loopsim").addoption(
        SNAPSHOT_UPDATE_OPTION,
        action="store_true",
        default=False,
        dest="update_snapshots",
        help="write the transcript snapshot of every scenario with `expect: {transcript: "
        "snapshot}` (__snapshots__/<scenario>.transcript.txt) instead of comparing",
    )


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser
) -> Iterator[None]:
    _spare_assertion_rewriting(early_config)
    # Every plugin (entry points, -p, the rootdir's conftest) is registered after this:
    # only now is it known whether syrupy brings --snapshot-update.
    result = yield
    _add_snapshot_update(early_config, parser)
    return result


#: the top-level package pytest marks for assertion rewriting: every package that ships a
#: ``pytest11`` entry point is marked whole, so that asserts in plugin code show values
_PACKAGE = __name__.partition(".")[0]


def _spare_assertion_rewriting(config: pytest.Config) -> None:
    """Import loopsim's own modules with Python's loader, not through assertion rewriting.

    pytest rewrites every module of a package with a ``pytest11`` entry point. loopsim's
    ~100 modules have no ``assert`` a user could see fail (only a few ``assert x is not
    None`` for the type checker), but each process paid for the rewriting: about 0.05 s
    CPU with pytest's cached rewritten files, about 0.4 s where pytest cannot write them
    (``PYTHONDONTWRITEBYTECODE``, a read-only install), once more in every xdist worker.
    Only the mark of loopsim's package is dropped: test files, conftest files and other
    plugins are rewritten as before, and ``pytest.register_assert_rewrite("loopsim")``
    in a conftest marks it again. With a pytest whose hook looks different, nothing is
    changed.
    """
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    decided = getattr(hook, "_marked_for_rewrite_cache", None)
    if isinstance(marked, set) and isinstance(decided, dict) and _PACKAGE in marked:
        marked.discard(_PACKAGE)
        decided.clear()  # pytest's own cache of the marks, cleared as mark_rewrite does


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    # syrupy's clean-up (--snapshot-update) takes every file of a __snapshots__ folder
    # that no syrupy assertion used for an unused snapshot, and deletes it: scenario
    # snapshots that share the folder with a test module's .ambr file are put back.
    kept = _scenario_snapshots(session)
    _fail_on_leftovers(session)
    result = yield
    _put_back(session.config, kept)
    from . import _files, _supervise  # noqa: PLC0415

    _files.sync_folders()  # the transcripts and their folders, once (see write_atomic)

    _supervise.record_verdict(int(session.exitstatus))
    return result


_LEFTOVERS = pytest.StashKey[list[str]]()


def _fail_on_leftovers(session: pytest.Session) -> None:
    """User code that left threads running (or called sys.exit in one) fails the session
    (shown in the terminal summary); the session's status is then the verdict that an
    ``os._exit`` of user code exits with."""
    from . import _supervise  # noqa: PLC0415

    left = _supervise.leftover_threads()
    session.config.stash[_LEFTOVERS] = left
    if left and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in terminalreporter.config.stash.get(_LEFTOVERS, []):
        terminalreporter.write_line(f"loopsim: user code {line}", red=True)


def _scenario_snapshots(session: pytest.Session) -> dict[Path, str]:
    config = session.config
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("syrupy"):
        return {}
    if not update_snapshots(config):
        return {}
    nodeids = {item.nodeid for item in session.items if isinstance(item, ScenarioItem)}
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        nodeids.update(r.nodeid for r in _pytest_output.scenario_reports(reporter.stats))
    kept: dict[Path, str] = {}
    for nodeid in sorted(nodeids):
        file, _, name = nodeid.partition("::")
        path = config.rootpath / file
        snapshot = path.parent / "__snapshots__" / f"{name}.transcript.txt"
        if snapshot.is_file():
            kept[snapshot] = snapshot.read_text(encoding="utf-8")
    return kept


def _put_back(config: pytest.Config, kept: dict[Path, str]) -> None:
    from ._files import write_atomic  # noqa: PLC0415 - only after a syrupy clean-up

    put_back = []
    for path, text in kept.items():
        if not path.exists():
            write_atomic(path, text)
            put_back.append(path)
    if put_back:
        output = config.pluginmanager.get_plugin(_pytest_output.PLUGIN_NAME)
        if output is not None:
            output.put_back = put_back


def update_snapshots(config: pytest.Config) -> bool:
    """Whether this run writes scenario snapshots (``--snapshot-update`` or its alias)."""
    return bool(config.getoption(SNAPSHOT_UPDATE_OPTION, default=False)) or bool(
        config.getoption(UPDATE_SNAPSHOTS_OPTION)
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
    _register_output(config)
    _block_looptime_without_pytest_asyncio(config)
    _spare_hypothesis_import(config)
    from . import _supervise  # noqa: PLC0415

    _supervise.install_exit_guard()
    _supervise.watch_threads()
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        _supervise.set_uncapture(capture.suspend_global_capture)


def _register_output(config: pytest.Config) -> None:
    note = None
    if config.getoption(UPDATE_SNAPSHOTS_OPTION):
        note = (
            f"loopsim: note: {UPDATE_SNAPSHOTS_OPTION} is deprecated and will go away; use "
            f"{SNAPSHOT_UPDATE_OPTION} (it updates scenario snapshots, and syrupy's too when "
            "syrupy is installed)"
        )
    config.pluginmanager.register(
        _pytest_output.ScenarioOutput(config, note=note), _pytest_output.PLUGIN_NAME
    )


def _block_looptime_without_pytest_asyncio(config: pytest.Config) -> None:
    # looptime's pytest plugin (installed with the bench extra) fails every fixture setup
    # when pytest-asyncio is absent (looptime 0.9 reads that plugin's module unguarded);
    # it has nothing to patch then, so loopsim's runs leave it out.
    manager = config.pluginmanager
    if manager.getplugin("asyncio") is None and manager.has_plugin("looptime_plugin"):
        manager.set_blocked("looptime_plugin")


#: hypothesis's pytest plugin (its entry point name) and the constants it reads
_HYPOTHESIS_PLUGIN = "hypothesispytest"
_SPARED = "_loopsim_spared"


def _spare_hypothesis_import(config: pytest.Config) -> None:
    """Keep hypothesis's pytest plugin from importing hypothesis after a run that never did.

    loopsim depends on hypothesis, so its plugin is in every pytest run where loopsim is
    installed, and its terminal summary imports ``hypothesis`` (0.3-0.5 s CPU) to look
    for observability files even when no test used it. Its summary is wrapped here: it
    runs as before whenever hypothesis was imported in this process, statistics were
    asked for, or a report (from an xdist worker, say) carries failing examples. Without
    any of these it has nothing to print: hypothesis wrote no file in this process.
    """
    manager = config.pluginmanager
    plugin = manager.get_plugin(_HYPOTHESIS_PLUGIN)
    key = getattr(plugin, "FAILING_EXAMPLES_KEY", None)
    option = getattr(plugin, "PRINT_STATISTICS_OPTION", None)
    if not (isinstance(key, str) and isinstance(option, str)):
        return  # absent, or a hypothesis whose plugin looks different: leave it alone
    for impl in manager.hook.pytest_terminal_summary.get_hookimpls():
        original = impl.function
        if impl.plugin is not plugin or getattr(original, _SPARED, False):
            continue
        if list(impl.argnames) != ["terminalreporter"]:
            return

        def summary(terminalreporter: Any, original: Any = original) -> object:
            if (
                "hypothesis" in sys.modules
                or terminalreporter.config.getoption(option, default=False)
                or any(
                    key in getattr(report, "__dict__", {})
                    for reports in terminalreporter.stats.values()
                    for report in reports
                )
            ):
                return original(terminalreporter)
            return None

        setattr(summary, _SPARED, True)
        # pluggy keeps the function on the registration; the attribute is public, if
        # typed Final (the registration is not renewed for a wrapper)
        object.__setattr__(impl, "function", summary)


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


# A top-level `name:` line (what a scenario file's name almost always is); read when a
# transcript is first written, so that two files of one name in a run get files of their own.
_NAME_LINE = re.compile(
    r"""^name:[ \t]*(?P<q>["']?)(?P<name>[^"'#\n]*?)(?P=q)[ \t]*(?:#.*)?$""", re.MULTILINE
)


def _declared_name(path: Path, stem: str) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        return stem  # reported when the item runs
    found = _NAME_LINE.search(head)
    return found.group("name").strip() if found and found.group("name").strip() else stem


class _TranscriptNames:
    """The transcript file names of the run's scenario items whose names clash.

    Worked out from every scenario item collected (before ``-k``/``-m`` deselect them:
    file names do not depend on them), but only when the first transcript is written:
    a passing run without ``--loopsim-transcripts`` reads no file for it, and neither
    does each xdist worker collecting the whole suite.
    """

    def __init__(self, rootpath: Path, items: list[ScenarioItem]) -> None:
        self.rootpath = rootpath
        self.items = items
        self.names: dict[int, str] | None = None  # id(item) -> its name, for clashes only

    def of(self, item: ScenarioItem) -> str | None:
        if self.names is None:
            self.names = self._clashes()
        return self.names.get(id(item))

    def _clashes(self) -> dict[int, str]:
        by_name: dict[str, list[ScenarioItem]] = {}
        for item in self.items:
            by_name.setdefault(_declared_name(item.path, item.name), []).append(item)
        names: dict[int, str] = {}
        for name, group in by_name.items():
            if len(group) < 2:
                continue
            for item in group:
                # every file of the clash says where it came from: <name>@<folder.file>
                where = (
                    item.path.relative_to(self.rootpath)
                    if item.path.is_relative_to(self.rootpath)
                    else Path(item.path.name)
                )
                origin = ".".join([*where.parent.parts, item.name])
                names[id(item)] = f"{name}@{origin}"
        return names


_TRANSCRIPT_NAMES = pytest.StashKey[_TranscriptNames]()


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect: file names do not depend on them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scenarios = [item for item in items if isinstance(item, ScenarioItem)]
    config.stash[_TRANSCRIPT_NAMES] = _TranscriptNames(config.rootpath, scenarios)


def _write_transcript(result: ScenarioResult, folder: Path, name: str | None = None) -> Path | None:
    """Write the run's transcript; a failed write is noted on the result, never raised
    (it would hide the scenario's own outcome). Not flushed file by file: the session's
    end flushes them all at once (pytest_sessionfinish, see write_atomic)."""
    try:
        return result.write_transcript(folder, name=name, durable=False)
    except OSError as exc:
        result.write_problem = f"could not write the transcript into {folder}: {exc}"
        return None


class ScenarioFailedError(AssertionError):
    """A scenario ran and some expectation or invariant failed."""

    def __init__(self, result: ScenarioResult, transcript_path: Path | None) -> None:
        self.result = result
        self.transcript_path = transcript_path
        super().__init__(f"scenario {result.name!r} failed")


class ScenarioStepWarning(UserWarning):
    """A scenario step changed nothing (``strict: true`` in the file makes it a failure)."""


def _warn_unchanged_steps(result: ScenarioResult) -> None:
    """Report each step of ``result`` that changed nothing as a pytest warning (weak
    expectations go to loopsim's own summary instead: see ``loopsim_weak``)."""
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

    @property
    def transcript_name(self) -> str | None:
        """The transcript's file name when another scenario of the run has the same name."""
        names = self.config.stash.get(_TRANSCRIPT_NAMES, None)
        return None if names is None else names.of(self)

    def runtest(self) -> None:
        from ._supervise import phase  # noqa: PLC0415 - lazy: keep pytest startup light

        with phase("scenario", scenario=str(self.path), bound=None):
            self._runtest()

    def _runtest(self) -> None:
        from ._errors import ScenarioError  # noqa: PLC0415 - lazy: keep pytest startup light
        from ._files import file_in  # noqa: PLC0415
        from ._scenario import load_scenario, run_scenario  # noqa: PLC0415
        from ._supervise import bounds, phase  # noqa: PLC0415

        config = self.config
        try:
            loaded = load_scenario(self.path, rootdir=self.config.rootpath)
        except ScenarioError:
            self.user_properties.append(("loopsim_invalid", True))
            raise
        options: dict[str, Any] = {
            "seed": config.getoption(SEED_OPTION),
            "backend": config.getoption(BACKEND_OPTION),
            "update_snapshots": update_snapshots(config),
            "engine": config.getoption(ENGINE_OPTION),
        }
        _describe(self, loaded.scenario.description)
        written: Path | None = None
        if loaded.scenario.vary:
            from ._scenario import run_vary, write_reproducer  # noqa: PLC0415

            if options["seed"] is not None:
                options["seeded"] = True  # --loopsim-seed also seeds hypothesis
            vary = run_vary(
                loaded,
                **options,
                max_examples=config.getoption(MAX_EXAMPLES_OPTION),
                progress=_pytest_output.progress_for(self),
                check_steps_matter=True,
            )
            result = vary.result
            self.user_properties.append(("loopsim_examples", vary.examples))
            self.user_properties.extend(
                [
                    ("loopsim_draws", vary.examples - vary.shrinks),
                    ("loopsim_planned", vary.planned),
                    ("loopsim_shrinks", vary.shrinks),
                ]
            )
            if vary.document is not None:
                folder = config.getoption(REPRODUCERS_OPTION)
                target = (
                    Path(folder) if folder is not None else config.rootpath / DEFAULT_REPRODUCERS
                )
                try:
                    result.reproducer = write_reproducer(loaded, result, vary.document, target)
                except OSError as exc:  # the failure itself must still be reported
                    result.write_problem = f"could not write the reproducer: {exc}"
                else:
                    written = file_in(target, result.name, ".transcript.json")
        else:
            with _cassette_problems():
                cassette = _scenario_cassette(config, self.path, loaded)
            if cassette is not None:
                options["models"] = cassette.client
            if loaded.scenario.wall_clock:
                _hold_wall_clock()
            real_time = loaded.scenario.limits.real_time
            bound = None if real_time is None else real_time + bounds().grace
            with phase("scenario", scenario=str(self.path), bound=bound):
                result = run_scenario(loaded, **options, check_steps_matter=True)
            if cassette is not None and result.passed:
                with _cassette_problems():
                    cassette.finish()
        self.user_properties.append(("loopsim_elapsed", result.elapsed))
        self.user_properties.extend(
            [
                ("loopsim_iterations", result.iterations),
                ("loopsim_stop_reason", result.stop_reason),
            ]
        )
        if config.getoption(REPORT_OPTION, None):
            from ._report import entry_from_result, entry_to_dict  # noqa: PLC0415

            entry = entry_from_result(
                result, description=loaded.scenario.description or "", root=config.rootpath
            )
            self.user_properties.append(("loopsim_report", entry_to_dict(entry)))
        _warn_unchanged_steps(result)
        weak = [w.render(result.path) for w in result.weak]
        if weak:
            self.user_properties.append(("loopsim_weak", weak))
        folder = config.getoption(TRANSCRIPTS_OPTION)
        if folder is not None:
            written = _write_transcript(result, Path(folder), self.transcript_name)
        if not result.passed:
            if written is None:
                written = _write_transcript(
                    result, config.rootpath / DEFAULT_FAILURE_TRANSCRIPTS, self.transcript_name
                )
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


def _describe(item: pytest.Item, description: str | None) -> None:
    if description:
        item.user_properties.append(("loopsim_description", description))


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
    if wall_clock:
        _hold_wall_clock()
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


# -- the virtual wall clock across tests ----------------------------------------------
# Patching the wall clock (freezegun) costs milliseconds to enter and to leave, more than a
# small simulation. The plugin enters it once for a run of consecutive tests that use it
# (marked async tests with the wall clock, scenario files) and leaves it before any other
# test and at the end of the session: other tests and everything after the session see
# the real functions, and the held patch answers real time to code outside a simulation.

_WALL = "loopsim._clock._wall"


def _hold_wall_clock() -> None:
    from ._clock import _wall_lookup, _wall_owned  # noqa: PLC0415 - the clock's own pair
    from ._clock._wall import hold  # noqa: PLC0415 - freezegun only when asked

    hold(_wall_lookup, _wall_owned)


def _release_wall_clock() -> None:
    wall = sys.modules.get(_WALL)  # never imported: nothing held
    if wall is not None:
        wall.release()


def _uses_wall_clock(item: pytest.Item) -> bool:
    if isinstance(item, ScenarioItem):
        return True  # its file decides (`wall_clock:`); a scenario runs no user test code
    marker = item.get_closest_marker("loopsim")
    return marker is not None and bool(marker.kwargs.get("wall_clock", True))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not _uses_wall_clock(item):
        _release_wall_clock()


def pytest_unconfigure() -> None:
    _release_wall_clock()


def _report_engines(result: ScenarioResult) -> None:
    """``--loopsim-engine both``: a comparison that could not be made, or a divergence the
    file declares as known, is reported as such (skip / xfail with the reason), never as a
    plain pass."""
    if result.not_compared is not None:
        pytest.skip(f"engines not compared: {result.not_compared} (the other engine passed)")
    if result.divergence is not None:
        pytest.xfail(result.divergence)


# -- cassettes (record a real model once, replay it in CI) ---------------------------------


#: The cassette record modes (``loopsim._transcript._cassette.RECORD_MODES``, which a test
#: keeps equal): spelled out here so that registering the option imports no transcript code.
RECORD_MODES = ("none", "once", "new_episodes", "all")


def _add_record_mode_option(group: Any) -> None:
    group.addoption(
        RECORD_MODE_OPTION,
        choices=RECORD_MODES,
        default="none",
        help="how the loopsim_cassette fixture and scenario files (cassettes/<scenario>"
        ".transcript.json next to the file) treat real models: none (replay only, the "
        "default), once (record a missing cassette), new_episodes (record requests past "
        "the cassette), all (re-record)",
    )


#: Set on an item whose test call failed: its cassette's end-of-test checks are skipped.
_CALL_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Note a failed test call, so a cassette reports one failure once (see below)."""
    report = yield
    if call.when == "call" and report.failed:
        item.stash[_CALL_FAILED] = True
    return report


@pytest.fixture
def loopsim_cassette(request: pytest.FixtureRequest) -> Iterator[Any]:
    """This test's :class:`~loopsim._transcript._cassette.Cassette`, in the record mode of
    ``--loopsim-record-mode``; stored in ``cassettes/<module>/<test>.transcript.json`` next
    to the test file. ``loopsim_cassette.client(agent_name, real_client)`` gives the
    client an agent talks to.

    One failure, one report: when the test itself failed (a replay mismatch, say), the
    cassette's end-of-test checks (every recorded turn asked for) are skipped and nothing
    is written; they run, and may fail the teardown, only after a passing test."""
    from ._transcript._cassette import (  # noqa: PLC0415 - keep startup light
        Cassette,
        CassetteMissingError,
        cassette_path,
    )

    with _cassette_problems():
        path = cassette_path(Path(str(request.path)), request.node.name)
        try:
            cassette = Cassette(path, request.config.getoption(RECORD_MODE_OPTION))
        except CassetteMissingError as exc:
            pytest.fail(str(exc), pytrace=False)
    yield cassette
    if not request.node.stash.get(_CALL_FAILED, False):
        with _cassette_problems():
            cassette.finish()


@contextlib.contextmanager
def _cassette_problems() -> Iterator[None]:
    """A cassette that cannot be read, written or placed fails the item in a few lines
    naming the file (not in a traceback of the plugin's code)."""
    from ._errors import TranscriptError  # noqa: PLC0415 - startup
    from ._files import UnsafePathError  # noqa: PLC0415

    try:
        yield
    except (TranscriptError, UnsafePathError) as exc:
        pytest.fail(f"cassette: {exc}", pytrace=False)


def _scenario_cassette(config: pytest.Config, path: Path, loaded: Any) -> Any:
    """The cassette of a scenario file (``cassettes/<name>.transcript.json`` next to it),
    or None. A scenario with a real model (a ``model:`` agent) always has one: in mode
    ``none`` a missing one fails the item, saying how to record it. A scripted scenario
    without one runs its own scripts in mode ``none``."""
    from ._scenario._model import cassette_path, model_agents  # noqa: PLC0415 - startup
    from ._transcript._cassette import Cassette, CassetteMissingError  # noqa: PLC0415

    mode = config.getoption(RECORD_MODE_OPTION)
    if (
        mode == "none"
        and not (path.parent / "cassettes").is_dir()
        and not model_agents(loaded.scenario)
    ):
        return None  # no cassette can exist: skip resolving its path (once per item)
    from ._files import file_in  # noqa: PLC0415 - startup

    target = cassette_path(loaded) or file_in(
        path.parent / "cassettes", loaded.name, ".transcript.json"
    )
    if mode == "none" and not target.exists() and not model_agents(loaded.scenario):
        return None
    if mode != "none" or target.exists():
        return Cassette(target, mode)
    shown = _shown(config, path)
    commands = (
        f"loopsim run {RECORD_MODE_OPTION}=once {shown}",
        f"pytest {RECORD_MODE_OPTION}=once {shown}",
    )
    pytest.fail(str(CassetteMissingError(_shown(config, target), commands)), pytrace=False)


def _shown(config: pytest.Config, path: Path) -> Path:
    """``path`` relative to the folder pytest was started in, when it is inside it."""
    try:
        return path.relative_to(config.invocation_params.dir)
    except ValueError:
        return path
