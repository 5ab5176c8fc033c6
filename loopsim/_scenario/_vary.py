"""``vary:`` — a scenario file as a hypothesis property test.

A ``vary:`` block maps dotted paths into the scenario document to how the value there
varies (``between``, ``one_of``, ``list_of``)::

    vary:
      agents.worker.policy.echo.delay: {between: [0, 600]}
      loop.max_iterations: {one_of: [1, 3, 10]}
      steps[2]: {one_of: [restart, {advance: 5}]}
    always:
      response: {contains: Collected}

The file as written runs first (checked against ``expect:`` and ``always:``); then
hypothesis draws values for every path, applies them to a copy of the document (in the
order of the block), validates the result like a loaded file and runs it, checking
``always:`` and the global invariants. Same-instant ties of background tasks are drawn
too (see ``loopsim._background._ties``). A failure is shrunk and written out as a
concrete scenario file — the draw applied, ``vary:`` removed, ``expect:`` = ``always:``,
the tie choices as ``ties:`` — plus its transcript; that file, run alone, fails the same
way. Paths are checked when the file is loaded: each must lead through the document to
an existing place (a new key is fine at the end when the schema knows it), and every
choice, and both ends of every range, must give a valid scenario.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .._clock._gc import with_simulation_gc
from .._errors import ScenarioError
from .._files import file_in, write_atomic
from ._check import Failure
from ._result import EngineChoice, ScenarioResult, run_scenario
from ._schema import Backend, ExpectSpec, Scenario, VarySpec, describe
from ._source import LoadedScenario
from ._vary_paths import DrawValidator, apply_draw, parse_path

__all__ = [
    "DEFAULT_REPRODUCERS",
    "VaryProgress",
    "VaryRun",
    "run_vary",
    "strategy",
    "write_reproducer",
]

#: Where failing draws are written, relative to the rootdir (``--loopsim-reproducers``).
DEFAULT_REPRODUCERS = Path(".loopsim") / "reproducers"
#: ``progress(draws, planned, shrinks)``, called after every run of a draw: draws done so
#: far, the number hypothesis plans (its ``max_examples``), shrink steps after a failure.
VaryProgress = Callable[[int, int, int], None]


# -- hypothesis ---------------------------------------------------------------------------------


def strategy(spec: VarySpec) -> Any:
    """The hypothesis strategy drawing the values ``spec`` allows."""
    from hypothesis import strategies as st  # noqa: PLC0415 - only vary runs need hypothesis

    if spec.between is not None:
        low, high = spec.between
        if isinstance(low, int) and isinstance(high, int):
            return st.integers(low, high)
        return st.floats(float(low), float(high), allow_nan=False, allow_infinity=False)
    if spec.one_of is not None:
        choices = spec.one_of
        if all(_immutable(choice) for choice in choices):
            return st.sampled_from(choices)  # nothing a run could change: no copy needed
        return st.sampled_from(choices).map(copy.deepcopy)
    if spec.fault_set is not None:
        faults = spec.fault_set
        low, high = faults.calls
        one = st.builds(faults.fault, st.sampled_from(faults.kinds), st.integers(low, high))
        return st.lists(one, min_size=faults.min_faults, max_size=faults.max_faults)
    assert spec.list_of is not None  # noqa: S101 - one of four kinds
    return st.lists(strategy(spec.list_of), min_size=spec.min_size, max_size=spec.largest)


def _immutable(value: Any) -> bool:
    """A value no run can change in place (a YAML scalar), so draws may share it."""
    return value is None or isinstance(value, (str, int, float, bool))


def _copy_value(value: Any) -> Any:
    """``value``, copied unless it is a scalar."""
    return value if _immutable(value) else copy.deepcopy(value)


class DrawFailedError(AssertionError):
    """One draw of a ``vary:`` scenario failed (hypothesis shrinks on it)."""

    def __init__(
        self, result: ScenarioResult, document: Any, one: LoadedScenario | None = None
    ) -> None:
        super().__init__(result.report(tail=0))
        self.result = result
        self.document = document
        #: the draw as a loaded scenario (None: the draw gave no valid scenario)
        self.one = one


@dataclass
class VaryRun:
    """What :func:`run_vary` did: the result to report and how many draws ran."""

    result: ScenarioResult
    examples: int
    #: the failing draw's document (None unless a draw failed)
    document: Any = None
    #: the draws hypothesis planned (``max_examples``, after any cap)
    planned: int = 0
    #: of ``examples``, the runs that shrank a failing draw
    shrinks: int = 0


def _settings(scenario: Scenario, seeded: bool, cap: int | None = None) -> Any:
    from hypothesis import HealthCheck, Verbosity, settings  # noqa: PLC0415 - only vary runs need hypothesis

    active = settings()
    options: dict[str, Any] = {
        "deadline": None,
        "verbosity": Verbosity.quiet,
        "report_multiple_bugs": False,
        "print_blob": False,
        "suppress_health_check": [
            *active.suppress_health_check,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    }
    if scenario.vary_settings is not None and scenario.vary_settings.max_examples is not None:
        options["max_examples"] = scenario.vary_settings.max_examples
    if cap is not None:  # --loopsim-max-examples: at most this many, never more
        options["max_examples"] = min(options.get("max_examples", active.max_examples), cap)
    if seeded:
        options["derandomize"] = False  # the scenario's seed is the seed
        options["database"] = None  # a stored example would make runs differ
    return settings(active, **options)


def seeded_by_default() -> bool:
    """Derandomize (seed hypothesis with the scenario seed): in CI, or when the active
    hypothesis profile derandomizes."""
    from hypothesis import settings  # noqa: PLC0415 - only vary runs need hypothesis

    return bool(os.environ.get("CI")) or bool(settings().derandomize)


def run_vary(
    loaded: LoadedScenario,
    *,
    seed: int | None = None,
    backend: Backend | None = None,
    update_snapshots: bool = False,
    seeded: bool | None = None,
    engine: EngineChoice | None = None,
    max_examples: int | None = None,
    progress: VaryProgress | None = None,
    check_steps_matter: bool = False,
) -> VaryRun:
    """Run the file as written, then hypothesis draws of its ``vary:`` block.

    ``max_examples`` caps the draws (the file's ``vary_settings.max_examples``, else the
    active hypothesis profile, decides below the cap); ``progress`` is told about every
    draw (see :data:`VaryProgress`). Returns the first failing result (for a draw:
    shrunk, with ``.draw`` set), or the passing result of the file as written.
    ``check_steps_matter`` is :func:`run_scenario`'s, for the file as written (never for
    the draws).
    """
    from hypothesis import given  # noqa: PLC0415 - only vary runs need hypothesis
    from hypothesis import seed as hypothesis_seed  # noqa: PLC0415 - only vary runs need hypothesis
    from hypothesis import strategies as st  # noqa: PLC0415 - only vary runs need hypothesis

    base = run_scenario(
        loaded,
        seed=seed,
        backend=backend,
        update_snapshots=update_snapshots,
        engine=engine,
        check_steps_matter=check_steps_matter,
    )
    if not base.passed:
        return VaryRun(base, 1)
    scenario = loaded.scenario
    if scenario.always is None:  # draws still check errors, unused turns and the invariants
        loaded = LoadedScenario(
            scenario.model_copy(update={"always": ExpectSpec()}),
            loaded.where,
            loaded.source,
            loaded.data,
            loaded.folders,
        )
    paths = [(text, parse_path(text) or (), strategy(spec)) for text, spec in scenario.vary.items()]
    validate = DrawValidator(loaded, [parts for _, parts, _ in paths])
    # a draw's transcript is recorded only when its checks read it (a snapshot)
    always = loaded.scenario.always
    record = always is not None and always.transcript is not None
    ties = st.integers(0, 1)
    if seeded is None:
        seeded = seeded_by_default()
    chosen = _settings(scenario, seeded, max_examples)
    planned = int(chosen.max_examples)
    count = 0
    shrinks = 0
    failing = False

    def draw_once(data: Any) -> None:
        nonlocal count, shrinks, failing
        shrinking = failing
        aborted = False
        try:
            run_draw(data)
        except DrawFailedError:
            failing = True
            raise
        except BaseException:
            # hypothesis stopped this draw part-way (e.g. it ran out of data): it retries
            # with a new one and does not count it, so neither do we
            aborted = True
            raise
        finally:
            if not aborted:
                count += 1
                shrinks += shrinking
                if progress is not None:
                    progress(count - shrinks, planned, shrinks)

    def run_draw(data: Any) -> None:
        # Only the mappings and lists on a drawn path are copied: the rest of the
        # document is shared with the file as written, which nothing changes in place.
        document = dict(loaded.data)
        document.pop("ties", None)  # `ties:` pins the file as written; draws draw every tie
        copied: set[int] = {id(document)}
        drawn: dict[str, Any] = {}
        for text, parts, values in paths:
            value = data.draw(values, label=text)
            drawn[text] = value
            apply_draw(document, parts, _copy_value(value), copied)

        stopped: list[BaseException] = []

        def tie(task_ids: Sequence[int]) -> int:
            # A draw can end part-way: hypothesis raises its own control-flow exception
            # (StopTest, once the example runs out of data). It is kept and raised on
            # through the simulation, which ends there (a BaseException: no tool or task
            # handler takes it as the run's own error); the run's result is then never
            # looked at, as it would read as user code aborting the run, a false
            # failure: the exception is raised again once the run is over. Finishing
            # the run with some choice instead would cost a whole simulation per
            # stopped draw (most draws of a file with ties).
            if stopped:
                return 0
            try:
                index: int = data.draw(
                    ties if len(task_ids) == 2 else st.integers(0, len(task_ids) - 1),
                    label="tie",
                )
            except BaseException as exc:
                stopped.append(exc)
                raise
            return index

        try:
            one = validate(document)
        except ScenarioError as exc:
            result = ScenarioResult(
                loaded.name,
                loaded.where.path,
                scenario.seed if seed is None else seed,
                backend or scenario.backend,
                failures=[Failure(f"the draw gives an invalid scenario: {exc}", "vary")],
                draw=drawn,
            )
            raise DrawFailedError(result, document) from None
        result = run_scenario(
            one,
            seed=seed,
            backend=backend,
            blocks=("always",),
            tie_breaker=tie,
            engine=engine,
            compare=False,  # draws: each engine's `always:`; the file as written is compared
            check_steps_matter=False,  # the file as written was looked at (`base`)
            record=record,  # only the failing draw's transcript is read: it is run again
        )
        if stopped:
            raise stopped[0]
        if not result.passed:
            result.draw = drawn
            raise DrawFailedError(result, document, one)

    draw_once.__name__ = f"vary_{loaded.stem}"
    draw_once._hypothesis_internal_add_digest = str(loaded.where.path or loaded.name).encode()  # type: ignore[attr-defined] # hypothesis's database key per scenario
    test: Callable[[], None] = given(st.data())(draw_once)
    test = chosen(test)
    if seeded:
        test = hypothesis_seed(scenario.seed if seed is None else seed)(test)
    try:
        # The collector's simulation thresholds for the whole property, not only during
        # each run: between runs hypothesis allocates too, and at the default thresholds
        # its young collections (and the full passes they lead to) traverse every run's
        # leftovers again (about 8% of a draw's time in the LoopAgent benchmark).
        with_simulation_gc(lambda _: test())(None)
    except DrawFailedError as failed:
        result = failed.result
        if failed.one is not None and result.transcript is None:
            result = _recorded(failed.one, result, seed, backend, engine)
        return VaryRun(result, count, failed.document, planned, shrinks)
    return VaryRun(base, count, planned=planned, shrinks=shrinks)


def _recorded(
    one: LoadedScenario,
    result: ScenarioResult,
    seed: int | None,
    backend: Backend | None,
    engine: EngineChoice | None,
) -> ScenarioResult:
    """The failing draw run again with its transcript recorded: the same document, seed,
    backend and tie choices (each engine's, in the order the draw made them), so the same
    run. Should it not fail the same way, the draw's own result is kept and says so."""
    chosen = [*result.ties, *(result.other.ties if result.other is not None else ())]
    replay = iter(chosen)
    again = run_scenario(
        one,
        seed=seed,
        backend=backend,
        blocks=("always",),
        tie_breaker=lambda _task_ids: next(replay, 0),
        engine=engine,
        compare=False,
        check_steps_matter=False,
    )
    if [f.message for f in again.failures] != [f.message for f in result.failures]:
        result.failures.append(
            Failure(
                "run again to record its transcript, the shrunk draw did not fail the same "
                "way: the run is not deterministic",
                "vary",
            )
        )
        return result
    again.draw = result.draw
    return again


# -- reproducers --------------------------------------------------------------------------------


def reproducer_document(loaded: LoadedScenario, result: ScenarioResult, document: Any) -> Any:
    """The failing draw as a concrete scenario: ``vary:`` removed, ``expect:`` = ``always:``,
    the run's seed, backend and tie choices pinned."""
    always = copy.deepcopy((loaded.data or {}).get("always") or {})
    out: dict[str, Any] = {}
    for key, value in document.items():
        if key in ("vary", "vary_settings", "always", "ties", "seed", "backend"):
            continue
        if key == "expect":
            continue
        if key == "agents":
            out["seed"] = result.seed
            out["backend"] = result.backend
        if key == "steps" and result.ties:
            out["ties"] = list(result.ties)
        out[key] = value
    out["expect"] = always
    return out


def _header(loaded: LoadedScenario, result: ScenarioResult) -> Iterator[str]:
    source: Any = loaded.where.path or loaded.name
    if isinstance(source, Path):
        with contextlib.suppress(ValueError):  # outside the working directory: absolute
            source = source.relative_to(Path.cwd())
    yield "# yaml-language-server: $schema=loopsim.schema.json"
    yield f"# Reproducer written by loopsim: the shrunk failing draw of {source}."
    yield "# The draw (applied below):"
    for path, value in (result.draw or {}).items():
        yield f"#   {path}: {describe(value)}"
    yield "# `expect:` is the scenario's `always:`. Run it alone: loopsim run <this file>"


def write_reproducer(
    loaded: LoadedScenario, result: ScenarioResult, document: Any, folder: Path
) -> Path:
    """Write the reproducer scenario (and its transcript) into ``folder``, atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    target = file_in(folder, loaded.stem, ".loopsim.yaml")
    body = yaml.safe_dump(
        reproducer_document(loaded, result, document),
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    text = "\n".join(_header(loaded, result)) + "\n" + body
    write_atomic(target, text)
    result.write_transcript(folder)
    return target
