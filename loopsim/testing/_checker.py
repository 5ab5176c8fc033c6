"""Validate a user's LoopEvaluator offline: generated contexts and scripted loops, no model.

:func:`check_evaluator` runs up to eight checks, each a hypothesis search that shrinks its
counterexample, and returns an :class:`EvaluatorReport`:

``returns_evaluation``
    ``evaluate`` returns a :class:`~loopsim.LoopEvaluation` (and does not raise) for
    ordinary contexts: text replies, feedback so far, session state.
``deterministic``
    The same context gives the same decision: a second and third call of the same
    instance, and a call of a fresh instance, on equal contexts all agree (catches state
    kept on ``self`` across runs; per-run state belongs in
    ``context.additional_properties``).
``no_mutation``
    ``evaluate`` leaves the context as it found it: initial messages, last response,
    feedback log and session state compare equal (as JSON) before and after.
``odd_responses``
    It tolerates empty responses, tool-only responses and approval requests/responses.
``within_budget``
    It does not block on the (virtual) clock longer than ``budget`` seconds: each call
    runs under ``anyio.fail_after(budget)`` in :func:`loopsim.simulate`. Nor does it take
    longer than ``call_time_limit`` real seconds (blocking code, a busy loop): the first
    such call fails this check and ends the checks (the rest are reported as not run).
``lets_loop_stop``
    Under a scripted agent that eventually completes (its later replies contain the
    ``marker``, ``"DONE"`` by default) the loop stops before its cap, and the run keeps
    the global invariants. The counterexample is a scenario file.
``keeps_going``
    At iteration 1, a reply without the ``marker`` (another letter case, "not done yet",
    an empty reply) does not stop the loop.
``waits_for_background``
    Only with ``background_rule``: contexts whose agent's
    :class:`~loopsim.BackgroundAgentsProvider` has running, completed, failed and lost
    tasks; the evaluator does not stop while one runs (and, for ``"same-as-builtin"``,
    does not go on when none does), as the built-in
    :class:`~loopsim.BackgroundTaskCompletionLoopEvaluator` decides on the same context.

The checks run the user's code: an ``evaluate`` (or a constructor) that raises
``SystemExit``, ``KeyboardInterrupt`` or a stray ``CancelledError`` is a finding named
after the frame that raised it, not the end of the process. All checks together may
take ``time_limit`` real seconds; checks that did not get to run are reported as such,
so a report never says "passed" for a check that did not run.

Example:
    >>> import loopsim
    >>> from loopsim.testing import check_evaluator
    >>> class Done(loopsim.LoopEvaluator):
    ...     async def evaluate(self, context):
    ...         if "DONE" in context.last_response.text:
    ...             return loopsim.LoopEvaluation.stop()
    ...         return loopsim.LoopEvaluation.continue_with_feedback("say DONE when done")
    >>> report = check_evaluator(Done, max_examples=10)
    >>> report.passed
    True
"""

from __future__ import annotations

import difflib
import gc
import itertools
import json
import sys
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

import anyio
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from .. import _trace
from .._background import BackgroundTaskCompletionLoopEvaluator
from .._clock import DEFAULT_START, simulate
from .._clock._watchdog import real_time
from .._errors import RealTimeLimitError, SimulationDeadlock, UserCodeAbortError
from .._loop import LoopContext, LoopEvaluation, LoopEvaluator
from .._scenario import Backend
from .._usercode import is_cancellation, user_code_failure
from ._af_loops import PredicateEvaluator, check_af_loop_stops, resolve_af_loop
from ._contexts import (
    ContextSpec,
    background_contexts,
    contexts,
    marked,
    unfinished,
    with_provider,
)
from ._loop_cases import _loop_case, _loop_scenario, _script
from ._strategies import DONE_MARKER, scenario_yaml

__all__ = [
    "ALL_CHECKS",
    "BACKGROUND_RULES",
    "CHECKS",
    "CheckResult",
    "EvaluatorReport",
    "check_evaluator",
    "simulate_recorded",
]

CHECKS = (
    "returns_evaluation",
    "deterministic",
    "no_mutation",
    "odd_responses",
    "within_budget",
    "lets_loop_stop",
    "keeps_going",
)
#: every check: :data:`CHECKS` (run by default) and the one a ``background_rule`` adds
ALL_CHECKS = (*CHECKS, "waits_for_background")
#: what ``background_rule`` can say (see :func:`check_evaluator`)
BACKGROUND_RULES = ("none", "wait-for-running", "same-as-builtin")
_DESCRIPTIONS = {
    "returns_evaluation": "evaluate returns a LoopEvaluation for ordinary contexts",
    "deterministic": "the same context gives the same decision",
    "no_mutation": "evaluate does not change the context",
    "odd_responses": "empty, tool-only and approval responses are tolerated",
    "within_budget": "evaluate does not block on the virtual clock beyond the budget",
    "lets_loop_stop": "a scripted agent that completes lets the loop stop before its cap",
    "keeps_going": "a reply without the marker (other case, near-miss) does not stop the loop",
    "waits_for_background": "running background tasks keep the loop going (background_rule)",
}

Factory = Callable[..., LoopEvaluator]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check: passed or not, and the shrunk counterexample.

    Attributes:
        name: one of :data:`ALL_CHECKS`.
        description: what the check asks of the evaluator.
        passed: True when no generated case broke it (False when it did not run).
        problem: what went wrong on the counterexample, or why the check did not run
            (None when passed).
        counterexample: the shrunk failing case as text — a context description (YAML)
            or, for ``lets_loop_stop``, a scenario file that reproduces it.
        ran: False when the check never ran (an earlier call was too slow, or the time
            limit was used up).
    """

    name: str
    description: str
    passed: bool
    problem: str | None = None
    counterexample: str | None = None
    ran: bool = True

    def render(self) -> str:
        status = "PASS" if self.passed else "FAIL" if self.ran else "NOT RUN"
        head = f"[{status}] {self.name}: {self.description}"
        if self.passed:
            return head
        lines = [head, f"    problem: {self.problem}"]
        if self.counterexample:
            lines.append("    counterexample:")
            lines.extend(f"      {line}" for line in self.counterexample.rstrip().splitlines())
        return "\n".join(lines)


@dataclass
class EvaluatorReport:
    """Every check's result for one evaluator; :meth:`assert_ok` raises on any failure."""

    evaluator: str
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failed(self) -> list[CheckResult]:
        return [check for check in self.checks if not check.passed]

    def __getitem__(self, name: str) -> CheckResult:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def render(self) -> str:
        failed = [c for c in self.checks if c.ran and not c.passed]
        not_run = [c for c in self.checks if not c.ran]
        if self.passed:
            verdict = "all checks passed"
        else:
            parts = [f"{len(failed)} check(s) failed"] if failed else []
            parts += [f"{len(not_run)} did not run"] if not_run else []
            verdict = ", ".join(parts)
        return "\n".join(
            [f"check-evaluator {self.evaluator}: {verdict}", *(c.render() for c in self.checks)]
        )

    def assert_ok(self) -> None:
        """Raise ``AssertionError`` with the rendered report when a check failed."""
        if not self.passed:
            raise AssertionError(self.render())


def simulate_recorded(
    async_fn: Callable[..., Awaitable[T]],
    *args: object,
    backend: Backend = "asyncio",
    seed: int = 0,
) -> tuple[T, list[_trace.Event]]:
    """:func:`loopsim.simulate` that also returns the run's recorded events.

    Feed the events to :func:`~loopsim.testing.check_invariants` (or one ``check_*``
    function) to check your own loop, built in code, against the global invariants.

    Example:
        >>> import loopsim
        >>> from loopsim.testing import check_invariants, simulate_recorded
        >>> client = loopsim.ScriptedChatClient(["draft", "final DONE"])
        >>> loop = loopsim.LoopAgent(loopsim.Agent(client, name="w"),
        ...                          loopsim.CompletionMarkerLoopEvaluator("DONE"))
        >>> response, events = simulate_recorded(loop.run, "write it")
        >>> response.messages[-1].text, check_invariants(events, max_iterations=10,
        ...                                             evaluator_count=1)
        ('final DONE', [])
    """
    trace = _trace.Trace(seed=seed)
    events: list[_trace.Event] = []
    trace.subscribe(events.append)
    result = simulate(async_fn, *args, backend=backend, seed=seed, trace=trace)
    return result, events


# -- running one evaluate ---------------------------------------------------------------------


@dataclass
class _Outcome:
    evaluation: Any = None
    error: BaseException | None = None
    blocked: bool = False
    #: not called (or its result is void): the checks stopped (see _Guard)
    skipped: bool = False
    before: str = ""
    after: str = ""


@dataclass
class _Guard:
    """The real-time bounds of one check_evaluator: per call and for everything."""

    call_limit: float | None
    deadline: float | None
    time_limit: float | None = None
    #: why the checks stopped (None: they go on)
    stopped: str | None = None
    #: set when a call was too slow: the within_budget finding
    slow: tuple[str, str] | None = None

    def go_on(self) -> bool:
        if self.stopped is None and self.deadline is not None and real_time() > self.deadline:
            self.stopped = f"the checks used up their time limit (time_limit={self.time_limit:g} s)"
        return self.stopped is None

    def too_slow(self, problem: str, counterexample: str) -> None:
        if self.stopped is None:
            self.stopped = "an earlier call was too slow (see within_budget)"
            self.slow = (problem, counterexample)

    def run_limit(self, calls: int) -> float | None:
        return None if self.call_limit is None else self.call_limit * calls


def _snapshot(context: LoopContext) -> str:
    return json.dumps(
        {
            "initial_messages": [
                m.model_dump(mode="json", exclude_none=True) for m in context.initial_messages
            ],
            "last_response": context.last_response.model_dump(mode="json", exclude_none=True),
            "feedback": list(context.feedback),
            "session_state": context.session.state,
            "iteration": context.iteration,
        },
        sort_keys=True,
        default=repr,
    )


class NeverAwaitedError(RuntimeError):
    """A coroutine made during one ``evaluate`` (or predicate) call was never awaited."""


def _unawaited(caught: Sequence[warnings.WarningMessage]) -> NeverAwaitedError | None:
    for warning in caught:
        text = str(warning.message)
        if issubclass(warning.category, RuntimeWarning) and "was never awaited" in text:
            return NeverAwaitedError(
                f"{text} during the call: a missing await (e.g. `if is_done(ctx):` on an "
                f"async is_done) decides on a coroutine object, which is always true "
                f"(line {warning.lineno} of {warning.filename})"
            )
    return None


#: a second virtual epoch for the determinism check: another day, 37 s into the minute
_OTHER_EPOCH = datetime(2026, 3, 14, 15, 9, 37, tzinfo=timezone.utc)


def _evaluate(
    evaluators: Sequence[LoopEvaluator],
    spec: ContextSpec,
    budget: float,
    guard: _Guard,
    *,
    start: datetime | None = None,
    seed: int = 0,
) -> list[_Outcome]:
    """Call each evaluator on its own fresh context built from ``spec`` (in one simulation)."""
    if not guard.go_on():
        return [_Outcome(skipped=True) for _ in evaluators]

    async def main() -> list[_Outcome]:
        outcomes = []
        for evaluator in evaluators:
            outcome = _Outcome()
            context = spec.build()
            outcome.before = _snapshot(context)
            began = real_time()
            took: float | None = None
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", RuntimeWarning)
                    with anyio.fail_after(budget):
                        outcome.evaluation = await evaluator.evaluate(context)
                    took = real_time() - began  # the collection below is ours, not the call's
                    # a coroutine kept in a cycle warns only when collected; what the call
                    # made is young (generations 0 and 1), and a full collection per
                    # evaluation costs more the larger the process's heap is
                    gc.collect(1)
                unawaited = _unawaited(caught)
                if unawaited is not None:
                    outcome.error = unawaited
            except TimeoutError:
                outcome.blocked = True
            except BaseException as exc:  # a finding, except our own cancellation
                if is_cancellation(exc):
                    raise
                outcome.error = user_code_failure(exc)
            if took is None:
                took = real_time() - began
            if guard.call_limit is not None and took > guard.call_limit:
                guard.too_slow(
                    f"one evaluate call took {took:.1f} real seconds, more than "
                    f"call_time_limit={guard.call_limit:g} s: it blocks the event loop "
                    "(time.sleep, synchronous I/O or heavy work)",
                    spec.describe(),
                )
                outcome.skipped = True
            outcome.after = _snapshot(context)
            outcomes.append(outcome)
        return outcomes

    try:
        return simulate(
            main,
            real_time_limit=guard.run_limit(len(evaluators)),
            start=DEFAULT_START if start is None else start,
            seed=seed,
        )
    except SimulationDeadlock:
        # waiting for something that never happens: blocked forever
        return [_Outcome(blocked=True) for _ in evaluators]
    except RealTimeLimitError:
        guard.too_slow(_busy_problem(guard), spec.describe())
        return [_Outcome(skipped=True) for _ in evaluators]


def _busy_problem(guard: _Guard) -> str:
    return (
        f"evaluate did not return within call_time_limit={guard.call_limit:g} s of real time: "
        "it keeps the loop busy without letting virtual time move (a loop around sleep(0), "
        "or a swallowed cancellation?)"
    )


def _decision(evaluation: Any) -> Any:
    if not isinstance(evaluation, LoopEvaluation):
        return ("not a LoopEvaluation", repr(evaluation))
    messages = None
    if evaluation.messages is not None:
        messages = [(m.role, m.text) for m in evaluation.messages]
    return (evaluation.should_reinvoke, evaluation.feedback, messages)


def _error_text(exc: BaseException, caller: str = "evaluate") -> str:
    if isinstance(exc, UserCodeAbortError):
        return f"{caller}: {exc.message}"
    if isinstance(exc, NeverAwaitedError):
        return f"{caller} left a coroutine never awaited: {exc}"
    return f"{caller} raised {type(exc).__name__}: {exc}"


# -- the checks ------------------------------------------------------------------------------


class _Found(AssertionError):  # noqa: N818 - a finding, not an error of ours
    def __init__(self, problem: str, counterexample: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.counterexample = counterexample


def _run_check(
    test: Callable[[Any], None], strategy: st.SearchStrategy[Any], examples: int
) -> tuple[str, str] | None:
    """Search for a failing example; returns (problem, counterexample) of the shrunk one."""
    last: list[_Found] = []

    def body(value: Any) -> None:
        try:
            test(value)
        except _Found as found:
            last.append(found)
            raise

    search = settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=False,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(body))
    try:
        search()
    except (_Found, Flaky):
        # Flaky: a decision that changes on replay (random draws) is a finding too
        found = last[-1]  # hypothesis replays the shrunk example last
        return found.problem, found.counterexample
    return None


def check_evaluator(
    factory: Factory,
    *,
    options: Mapping[str, Any] | None = None,
    max_examples: int = 50,
    budget: float = 60.0,
    marker: str = DONE_MARKER,
    import_path: str | None = None,
    next_message: Callable[..., Any] | None = None,
    engine: Literal["loopsim", "agent_framework"] = "loopsim",
    call_time_limit: float | None = 1.0,
    time_limit: float | None = 300.0,
    background_rule: str = "none",
    checks: Sequence[str] | None = None,
) -> EvaluatorReport:
    """Check a ``LoopEvaluator`` offline against generated contexts and scripted loops.

    An agent_framework-style loop is checked the same way: pass its ``should_continue``
    predicate (and ``next_message``), an ``AgentLoopMiddleware``, or a factory returning
    one (a ``with_judge`` setup). Its decision is asked on the generated contexts (as
    agent_framework's loop keywords) and ``lets_loop_stop`` runs the real
    ``AgentLoopMiddleware`` around a real ``agent_framework.Agent`` (needs the
    ``agent-framework`` extra).

    Args:
        factory: the evaluator class (or any callable returning a fresh evaluator), or
            an agent_framework loop as above.
        options: keyword arguments for ``factory`` (the ``--options`` JSON of the CLI).
        max_examples: generated cases per check.
        budget: virtual seconds one ``evaluate`` may take before it counts as blocked.
        marker: the text the scripted agent's completing reply contains (what your
            evaluator looks for to say "done").
        import_path: ``module:Class`` for the counterexample scenario file (default: read
            from ``factory``).
        next_message: an agent_framework-style loop's ``next_message`` callable.
        engine: where ``lets_loop_stop`` runs a LoopEvaluator's inner agent: loopsim's
            Agent, or a real ``agent_framework.Agent`` (via ``as_agent``).
        call_time_limit: real seconds one ``evaluate`` may take (None: no limit). The
            first call over it fails ``within_budget`` and ends the checks; a call that
            keeps the loop busy is stopped by the watchdog after this long.
        time_limit: real seconds all checks together may take (None: no limit); checks
            left when it is used up are reported as not run.
        background_rule: what the evaluator promises about background tasks (the
            ``--background-rule`` of the CLI). ``"none"`` (default): nothing, and
            ``waits_for_background`` is not run. Otherwise every generated agent carries
            a :class:`~loopsim.BackgroundAgentsProvider` and ``waits_for_background``
            asks contexts with running, completed, failed and lost tasks, the built-in
            :class:`~loopsim.BackgroundTaskCompletionLoopEvaluator` deciding what a task
            is: ``"wait-for-running"``: never stop while a task runs (the marker rule
            applies besides); ``"same-as-builtin"``: continue exactly while a task
            runs, whatever the reply says (``keeps_going`` is then not run: the marker
            plays no part).
        checks: run only these of :data:`ALL_CHECKS` (None: all that apply); the report
            lists only the checks that ran.

    Returns:
        An :class:`EvaluatorReport`; call ``.assert_ok()`` in a test. Do not call this
        inside a hypothesis ``@given`` test: it runs its own searches.
    """
    if background_rule not in BACKGROUND_RULES:
        rules = ", ".join(BACKGROUND_RULES)
        msg = f"background_rule must be one of {rules}; got {background_rule!r}"
        raise ValueError(msg)
    background = background_rule != "none"
    unknown = sorted(set(checks or ()) - set(ALL_CHECKS))
    if unknown:
        msg = f"unknown check(s) {', '.join(unknown)}; the checks are {', '.join(ALL_CHECKS)}"
        raise ValueError(msg)
    kwargs = dict(options or {})
    if import_path is None:
        owner = factory if hasattr(factory, "__qualname__") else type(factory)
        import_path = f"{owner.__module__}:{owner.__qualname__}"
    path = import_path
    af_loop = resolve_af_loop(factory, kwargs, next_message)

    def make() -> LoopEvaluator:
        if af_loop is not None:
            return PredicateEvaluator(af_loop)
        try:
            return factory(**kwargs)
        except BaseException as exc:
            error = user_code_failure(exc)
            if error is exc:
                raise
            raise error from exc

    caller = "should_continue" if af_loop is not None else "evaluate"
    report = EvaluatorReport(path)
    guard = _Guard(
        call_limit=_positive("call_time_limit", call_time_limit),
        deadline=None if time_limit is None else real_time() + time_limit,
        time_limit=_positive("time_limit", time_limit),
    )

    def returns_evaluation(spec: ContextSpec) -> None:
        (outcome,) = _evaluate([make()], spec, budget, guard)
        if outcome.skipped:
            return
        if outcome.error is not None:
            raise _Found(_error_text(outcome.error, caller), spec.describe())
        if not outcome.blocked and not isinstance(outcome.evaluation, LoopEvaluation):
            raise _Found(
                f"{caller} returned {type(outcome.evaluation).__name__}, expected a LoopEvaluation",
                spec.describe(),
            )

    other_seeds = itertools.count(1)

    def deterministic(spec: ContextSpec) -> None:
        shared = make()
        outcomes = _evaluate([shared, shared, shared, make()], spec, budget, guard)
        if any(o.error is not None or o.blocked or o.skipped for o in outcomes):
            return  # reported by returns_evaluation / within_budget
        decisions = [_decision(o.evaluation) for o in outcomes]
        if len(set(map(repr, decisions))) > 1:
            calls = ", ".join(
                f"call {n}: {_show(d, caller)}" for n, d in enumerate(decisions[:3], start=1)
            )
            raise _Found(
                f"the same context gave different decisions ({calls} of one instance; a fresh "
                f"instance: {_show(decisions[3], caller)}). Keep per-run state in "
                "context.additional_properties, not on self",
                spec.describe(),
            )
        (epoch,) = _evaluate([make()], spec, budget, guard, start=_OTHER_EPOCH)
        # the global random generator is seeded per simulation (loopsim._entropy), so
        # every context's first draw under one seed is the same: each context is asked
        # under a seed of its own, and a random decision differs on some of them
        (seeded,) = _evaluate([make()], spec, budget, guard, seed=next(other_seeds))
        for other, what, fix in (
            (
                epoch,
                (
                    f"the virtual clock ({DEFAULT_START:%Y-%m-%d %H:%M:%S} against "
                    f"{_OTHER_EPOCH:%Y-%m-%d %H:%M:%S} UTC)"
                ),
                "it reads the wall clock (datetime.now, time.time): decide from the context",
            ),
            (
                seeded,
                "the seed (0 against another)",
                "it draws random numbers: decide from the context",
            ),
        ):
            if other.error is not None or other.blocked or other.skipped:
                continue
            if repr(_decision(other.evaluation)) != repr(decisions[3]):
                raise _Found(
                    f"the decision depends on {what}: {_show(decisions[3], caller)} against "
                    f"{_show(_decision(other.evaluation), caller)}; {fix}",
                    spec.describe(),
                )

    def no_mutation(spec: ContextSpec) -> None:
        (outcome,) = _evaluate([make()], spec, budget, guard)
        if not outcome.skipped and outcome.before != outcome.after:
            changed = _changed(outcome.before, outcome.after)
            raise _Found(f"{caller} changed the context:\n{changed}", spec.describe())

    def odd_responses(spec: ContextSpec) -> None:
        (outcome,) = _evaluate([make()], spec, budget, guard)
        if outcome.skipped:
            return
        if outcome.error is not None:
            raise _Found(_error_text(outcome.error, caller), spec.describe())
        if not outcome.blocked and not isinstance(outcome.evaluation, LoopEvaluation):
            raise _Found(f"{caller} returned {type(outcome.evaluation).__name__}", spec.describe())

    def within_budget(spec: ContextSpec) -> None:
        (outcome,) = _evaluate([make()], spec, budget, guard)
        if outcome.blocked:
            raise _Found(
                f"{caller} did not return within {budget:g} virtual seconds (or waited for "
                "something that never happens)",
                spec.describe(),
            )

    def lets_loop_stop(case: tuple[int, int, int, bool]) -> None:
        if af_loop is not None:
            found = check_af_loop_stops(
                af_loop,
                path=path,
                script=_script(case, marker),
                done_at=case[0],
                cap=case[1],
                streaming=case[3],
                marker=marker,
                budget=budget,
                background=background,
            )
            if found is not None:
                raise _Found(*found)
            return
        if not guard.go_on():
            return
        problem = _loop_case(
            make,
            case,
            marker,
            budget,
            engine,
            real_time_limit=guard.run_limit(case[1]),
            on_busy=lambda: guard.too_slow(_busy_problem(guard), ""),
            background=background,
        )
        if problem is not None:
            scenario = _loop_scenario(path, kwargs, case, marker, background)
            raise _Found(problem, scenario_yaml(scenario))

    def keeps_going(spec: ContextSpec) -> None:
        (outcome,) = _evaluate([make()], spec, budget, guard)
        if outcome.skipped or outcome.error is not None or outcome.blocked:
            return  # reported by returns_evaluation / within_budget
        if (
            isinstance(outcome.evaluation, LoopEvaluation)
            and not outcome.evaluation.should_reinvoke
        ):
            said = "should_continue returned False" if af_loop else "evaluate returned stop()"
            text = "\n".join(m["contents"][0]["text"] for m in spec.response)
            raise _Found(
                f"{said} at iteration 1 on a reply without {marker!r} ({text!r}): the loop "
                "stops before the agent has completed (an early stop left in, or a marker "
                "matched in another case or as part of a longer reply)",
                spec.describe(),
            )

    def waits_for_background(spec: ContextSpec) -> None:
        outcome, reference = _evaluate(
            [make(), BackgroundTaskCompletionLoopEvaluator()], spec, budget, guard
        )
        if outcome.skipped:
            return
        tasks = ", ".join(f"task {n} {s}" for n, s in enumerate(spec.tasks, start=1))
        if outcome.error is not None:
            raise _Found(
                f"{_error_text(outcome.error, caller)} (background tasks: {tasks})",
                spec.describe(),
            )
        if outcome.blocked or not isinstance(outcome.evaluation, LoopEvaluation):
            return  # reported by within_budget / returns_evaluation
        running = reference.evaluation.should_reinvoke
        goes_on = outcome.evaluation.should_reinvoke
        said = _show(_decision(outcome.evaluation), caller)
        if running and not goes_on:
            raise _Found(
                f"{said} while a background task is still running ({tasks}): the loop ends "
                "before the work it started has finished (an evaluator that ignores pending "
                "background tasks); the built-in BackgroundTaskCompletionLoopEvaluator goes "
                "on while provider.incomplete_tasks(session) is not empty",
                spec.describe(),
            )
        if background_rule == "same-as-builtin" and goes_on and not running:
            raise _Found(
                f"{said} although no background task is running ({tasks}): completed, "
                "failed and lost tasks never keep the loop going under "
                "background_rule='same-as-builtin' (a lost task's run is gone for good)",
                spec.describe(),
            )

    ordinary = contexts(odd=False)
    odd = contexts(odd=True)
    if background:
        ordinary, odd = ordinary.map(with_provider), odd.map(with_provider)
    both = st.one_of(ordinary, odd)
    loops = st.integers(1, 4).flatmap(
        lambda done_at: st.tuples(
            st.just(done_at),
            st.integers(done_at + 2, done_at + 6),
            st.integers(0, 3),
            st.booleans(),
        )
    )
    plan: list[tuple[str, Callable[[Any], None], st.SearchStrategy[Any]]] = [
        ("returns_evaluation", returns_evaluation, ordinary),
        (
            "deterministic",
            deterministic,
            st.one_of(marked(marker).map(with_provider) if background else marked(marker), odd),
        ),
        ("no_mutation", no_mutation, both),
        ("odd_responses", odd_responses, odd),
        ("within_budget", within_budget, both),
        ("lets_loop_stop", lets_loop_stop, loops),
    ]
    if background_rule != "same-as-builtin":
        keep = unfinished(marker)
        plan.append(("keeps_going", keeps_going, keep.map(with_provider) if background else keep))
    if background:
        plan.append(("waits_for_background", waits_for_background, background_contexts(marker)))
    if checks is not None:
        plan = [step for step in plan if step[0] in checks]
    with warnings.catch_warnings():
        # A never-awaited coroutine is a finding of the call that made it (see _evaluate),
        # not noise elsewhere; agent_framework's ExperimentalWarning is not the user's.
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        experimental = _experimental_warning()
        if experimental is not None:
            warnings.filterwarnings("ignore", category=experimental)
        _run_plan(report, plan, guard, max_examples)
    if guard.slow is not None:
        problem, counterexample = guard.slow
        slow = CheckResult(
            "within_budget",
            _DESCRIPTIONS["within_budget"],
            passed=False,
            problem=problem,
            counterexample=counterexample or None,
        )
        report.checks = [slow if c.name == "within_budget" else c for c in report.checks]
    return report


def _experimental_warning() -> type[Warning] | None:
    stage = sys.modules.get("agent_framework._feature_stage")
    found = getattr(stage, "ExperimentalWarning", None)
    return found if isinstance(found, type) and issubclass(found, Warning) else None


def _run_plan(
    report: EvaluatorReport,
    plan: list[tuple[str, Callable[[Any], None], st.SearchStrategy[Any]]],
    guard: _Guard,
    max_examples: int,
) -> None:
    for name, test, strategy in plan:
        if not guard.go_on():
            report.checks.append(_not_run(name, guard))
            continue
        found = _run_check(test, strategy, max_examples)
        if guard.stopped is not None:
            # Stopped during this check: what it saw may be void (skipped calls).
            report.checks.append(_not_run(name, guard))
            continue
        if found is None:
            report.checks.append(CheckResult(name, _DESCRIPTIONS[name], passed=True))
        else:
            report.checks.append(
                CheckResult(
                    name,
                    _DESCRIPTIONS[name],
                    passed=False,
                    problem=found[0],
                    counterexample=found[1],
                )
            )


def _not_run(name: str, guard: _Guard) -> CheckResult:
    return CheckResult(
        name, _DESCRIPTIONS[name], passed=False, problem=f"not run: {guard.stopped}", ran=False
    )


def _positive(name: str, value: float | None) -> float | None:
    if value is not None and not value > 0:
        msg = f"{name} must be > 0 seconds (or None for no limit), got {value!r}"
        raise ValueError(msg)
    return value


def _show(decision: Any, caller: str = "evaluate") -> str:
    if caller == "should_continue" and isinstance(decision[0], bool):
        # a predicate's own words: what should_continue returned
        feedback = "" if decision[1] is None else f" (feedback {decision[1]!r})"
        return f"should_continue returned {decision[0]}{feedback}"
    if decision[0] is True:
        return f"continue (feedback {decision[1]!r})" if decision[2] is None else "continue"
    if decision[0] is False:
        return "stop"
    return str(decision)


def _changed(before: str, after: str) -> str:
    """The whole diff of what changed, key by key (unified diff of the indented JSON)."""
    old, new = json.loads(before), json.loads(after)
    parts = []
    for key in [k for k in old if old[k] != new.get(k)]:
        was = json.dumps(old[key], indent=2, sort_keys=True).splitlines()
        became = json.dumps(new.get(key), indent=2, sort_keys=True).splitlines()
        diff = difflib.unified_diff(was, became, f"{key} before", f"{key} after", lineterm="")
        parts.append(f"{key} was {json.dumps(old[key])}, became {json.dumps(new.get(key))}")
        parts.extend(diff)
    return "\n".join(parts)
