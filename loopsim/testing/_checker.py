"""Validate a user's LoopEvaluator offline: generated contexts and scripted loops, no model.

:func:`check_evaluator` runs six checks, each a hypothesis search that shrinks its
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
    runs under ``anyio.fail_after(budget)`` in :func:`loopsim.simulate`.
``lets_loop_stop``
    Under a scripted agent that eventually completes (its later replies contain the
    ``marker``, ``"DONE"`` by default) the loop stops before its cap, and the run keeps
    the global invariants. The counterexample is a scenario file.

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

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .. import _trace
from .._agents import Agent
from .._clients import ScriptedChatClient
from .._clock import simulate
from .._errors import SimulationDeadlock
from .._loop import LoopContext, LoopEvaluation, LoopEvaluator
from .._loop._evaluation import FeedbackView
from .._messages import (
    AgentResponse,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
)
from .._scenario import Backend
from ._af_loops import PredicateEvaluator, check_af_loop_stops, resolve_af_loop
from ._loop_cases import _loop_case, _loop_scenario, _script
from ._strategies import DONE_MARKER, scenario_yaml

__all__ = ["CHECKS", "CheckResult", "EvaluatorReport", "check_evaluator", "simulate_recorded"]

CHECKS = (
    "returns_evaluation",
    "deterministic",
    "no_mutation",
    "odd_responses",
    "within_budget",
    "lets_loop_stop",
)
_DESCRIPTIONS = {
    "returns_evaluation": "evaluate returns a LoopEvaluation for ordinary contexts",
    "deterministic": "the same context gives the same decision",
    "no_mutation": "evaluate does not change the context",
    "odd_responses": "empty, tool-only and approval responses are tolerated",
    "within_budget": "evaluate does not block on the virtual clock beyond the budget",
    "lets_loop_stop": "a scripted agent that completes lets the loop stop before its cap",
}

Factory = Callable[..., LoopEvaluator]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check: passed or not, and the shrunk counterexample.

    Attributes:
        name: one of :data:`CHECKS`.
        description: what the check asks of the evaluator.
        passed: True when no generated case broke it.
        problem: what went wrong on the counterexample (None when passed).
        counterexample: the shrunk failing case as text — a context description (YAML)
            or, for ``lets_loop_stop``, a scenario file that reproduces it.
    """

    name: str
    description: str
    passed: bool
    problem: str | None = None
    counterexample: str | None = None

    def render(self) -> str:
        head = f"[{'PASS' if self.passed else 'FAIL'}] {self.name}: {self.description}"
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
        verdict = "all checks passed" if self.passed else f"{len(self.failed)} check(s) failed"
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


# -- generated contexts -----------------------------------------------------------------------


@dataclass(frozen=True)
class _ContextSpec:
    """A context as plain data, so equal specs build equal (but separate) contexts."""

    iteration: int
    initial: tuple[str, ...]
    response: tuple[dict[str, Any], ...]  # messages as JSON
    feedback: tuple[str | None, ...]
    state: Mapping[str, Any]

    def build(self) -> LoopContext:
        agent = Agent(ScriptedChatClient([]), name="agent")
        session = agent.create_session()
        session.state.update(json.loads(json.dumps(dict(self.state))))
        initial = [Message.user(text) for text in self.initial]
        response = AgentResponse([Message.model_validate(m) for m in self.response])
        context = LoopContext(agent, session, initial, response)
        context._iteration = self.iteration
        context._feedback = FeedbackView(list(self.feedback))
        return context

    def describe(self) -> str:
        data = {
            "iteration": self.iteration,
            "initial_messages": list(self.initial),
            "last_response": {"messages": list(self.response)},
            "feedback": list(self.feedback),
            "session_state": dict(self.state),
        }
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


_WORDS = ("draft", "fix", "tests", "pass", "more", "DONE", "done", "ok", "")
_text = st.lists(st.sampled_from(_WORDS), max_size=4).map(" ".join)


def _call(n: int) -> dict[str, Any]:
    return FunctionCallContent(call_id=f"c{n}", name="lookup", arguments={"q": "x"}).model_dump(
        mode="json"
    )


def _odd_response(kind: str) -> tuple[dict[str, Any], ...]:
    call = FunctionCallContent(call_id="c1", name="deploy", arguments={})
    if kind == "empty":
        return ()
    if kind == "empty_text":
        return (Message("assistant", "").model_dump(mode="json", exclude_none=True),)
    if kind == "tool_only":
        return (
            Message("assistant", [FunctionCallContent.model_validate(_call(1))]).model_dump(
                mode="json"
            ),
            Message("tool", [FunctionResultContent(call_id="c1", result="found")]).model_dump(
                mode="json"
            ),
        )
    if kind == "approval_request":
        content: Any = FunctionApprovalRequestContent(id="a1", function_call=call)
        return (Message("assistant", [content]).model_dump(mode="json", exclude_none=True),)
    content = FunctionApprovalResponseContent(id="a1", approved=True, function_call=call)
    return (Message("user", [content]).model_dump(mode="json", exclude_none=True),)


ODD_KINDS = ("empty", "empty_text", "tool_only", "approval_request", "approval_response")


@st.composite
def _contexts(draw: st.DrawFn, *, odd: bool) -> _ContextSpec:
    iteration = draw(st.integers(1, 6))
    if odd:
        response = _odd_response(draw(st.sampled_from(ODD_KINDS)))
    else:
        texts = draw(st.lists(_text, min_size=1, max_size=2))
        response = tuple(
            Message.assistant(t).model_dump(mode="json", exclude_none=True) for t in texts
        )
    feedback = tuple(
        draw(
            st.lists(
                st.none() | _text.filter(str.strip), min_size=iteration - 1, max_size=iteration - 1
            )
        )
    )
    state = draw(
        st.dictionaries(st.sampled_from(["notes", "plan"]), _text, max_size=2).map(
            lambda d: {"user": d} if d else {}
        )
    )
    initial = tuple(draw(st.lists(_text.filter(str.strip), min_size=1, max_size=2)))
    return _ContextSpec(iteration, initial, response, feedback, state)


# -- running one evaluate ---------------------------------------------------------------------


@dataclass
class _Outcome:
    evaluation: Any = None
    error: BaseException | None = None
    blocked: bool = False
    before: str = ""
    after: str = ""


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


def _evaluate(
    evaluators: Sequence[LoopEvaluator], spec: _ContextSpec, budget: float
) -> list[_Outcome]:
    """Call each evaluator on its own fresh context built from ``spec`` (in one simulation)."""

    async def main() -> list[_Outcome]:
        outcomes = []
        for evaluator in evaluators:
            outcome = _Outcome()
            context = spec.build()
            outcome.before = _snapshot(context)
            try:
                with anyio.fail_after(budget):
                    outcome.evaluation = await evaluator.evaluate(context)
            except TimeoutError:
                outcome.blocked = True
            except Exception as exc:  # noqa: BLE001 - the user's evaluator failing is a finding
                outcome.error = exc
            outcome.after = _snapshot(context)
            outcomes.append(outcome)
        return outcomes

    try:
        return simulate(main)
    except SimulationDeadlock:
        # waiting for something that never happens: blocked forever
        return [_Outcome(blocked=True) for _ in evaluators]


def _decision(evaluation: Any) -> Any:
    if not isinstance(evaluation, LoopEvaluation):
        return ("not a LoopEvaluation", repr(evaluation))
    messages = None
    if evaluation.messages is not None:
        messages = [(m.role, m.text) for m in evaluation.messages]
    return (evaluation.should_reinvoke, evaluation.feedback, messages)


def _error_text(exc: BaseException) -> str:
    return f"evaluate raised {type(exc).__name__}: {exc}"


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
    except _Found:
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

    Returns:
        An :class:`EvaluatorReport`; call ``.assert_ok()`` in a test. Do not call this
        inside a hypothesis ``@given`` test: it runs its own searches.
    """
    kwargs = dict(options or {})
    if import_path is None:
        owner = factory if hasattr(factory, "__qualname__") else type(factory)
        import_path = f"{owner.__module__}:{owner.__qualname__}"
    path = import_path
    af_loop = resolve_af_loop(factory, kwargs, next_message)

    def make() -> LoopEvaluator:
        if af_loop is not None:
            return PredicateEvaluator(af_loop)
        return factory(**kwargs)

    report = EvaluatorReport(path)

    def returns_evaluation(spec: _ContextSpec) -> None:
        (outcome,) = _evaluate([make()], spec, budget)
        if outcome.error is not None:
            raise _Found(_error_text(outcome.error), spec.describe())
        if not outcome.blocked and not isinstance(outcome.evaluation, LoopEvaluation):
            raise _Found(
                f"evaluate returned {type(outcome.evaluation).__name__}, expected a LoopEvaluation",
                spec.describe(),
            )

    def deterministic(spec: _ContextSpec) -> None:
        shared = make()
        outcomes = _evaluate([shared, shared, shared, make()], spec, budget)
        if any(o.error is not None or o.blocked for o in outcomes):
            return  # reported by returns_evaluation / within_budget
        decisions = [_decision(o.evaluation) for o in outcomes]
        if len(set(map(repr, decisions))) > 1:
            calls = ", ".join(f"call {n}: {_show(d)}" for n, d in enumerate(decisions[:3], start=1))
            raise _Found(
                f"the same context gave different decisions ({calls} of one instance; a fresh "
                f"instance: {_show(decisions[3])}). Keep per-run state in "
                "context.additional_properties, not on self",
                spec.describe(),
            )

    def no_mutation(spec: _ContextSpec) -> None:
        (outcome,) = _evaluate([make()], spec, budget)
        if outcome.before != outcome.after:
            changed = _changed(outcome.before, outcome.after)
            raise _Found(f"evaluate changed the context: {changed}", spec.describe())

    def odd_responses(spec: _ContextSpec) -> None:
        (outcome,) = _evaluate([make()], spec, budget)
        if outcome.error is not None:
            raise _Found(_error_text(outcome.error), spec.describe())
        if not outcome.blocked and not isinstance(outcome.evaluation, LoopEvaluation):
            raise _Found(f"evaluate returned {type(outcome.evaluation).__name__}", spec.describe())

    def within_budget(spec: _ContextSpec) -> None:
        (outcome,) = _evaluate([make()], spec, budget)
        if outcome.blocked:
            raise _Found(
                f"evaluate did not return within {budget:g} virtual seconds (or waited for "
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
            )
            if found is not None:
                raise _Found(*found)
            return
        problem = _loop_case(make, case, marker, budget, engine)
        if problem is not None:
            raise _Found(problem, scenario_yaml(_loop_scenario(path, kwargs, case, marker)))

    ordinary = _contexts(odd=False)
    odd = _contexts(odd=True)
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
        ("deterministic", deterministic, both),
        ("no_mutation", no_mutation, both),
        ("odd_responses", odd_responses, odd),
        ("within_budget", within_budget, both),
        ("lets_loop_stop", lets_loop_stop, loops),
    ]
    for name, test, strategy in plan:
        found = _run_check(test, strategy, max_examples)
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
    return report


def _show(decision: Any) -> str:
    if decision[0] is True:
        return f"continue (feedback {decision[1]!r})" if decision[2] is None else "continue"
    if decision[0] is False:
        return "stop"
    return str(decision)


def _changed(before: str, after: str) -> str:
    old, new = json.loads(before), json.loads(after)
    keys = [k for k in old if old[k] != new.get(k)]
    return ", ".join(
        f"{k} was {json.dumps(old[k])[:80]}, became {json.dumps(new[k])[:80]}" for k in keys
    )
