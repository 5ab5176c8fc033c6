"""LoopAgent (non-streaming): construction, iteration rules, sessions, results, report.

Ports every LoopAgent edge case of the reference (section 11, LoopAgentTests.cs), plus
the run report. The doubles here (``Inner``, ``Decide``) are reused by
``test_loop_streaming.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import loopsim
from loopsim import (
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    FunctionApprovalRequestContent,
    FunctionCallContent,
    LoopAgent,
    LoopAgentOptions,
    LoopContext,
    LoopEvaluation,
    LoopEvaluator,
    Message,
    Usage,
    UsageContent,
    _trace,
)

# -- doubles ---------------------------------------------------------------------------

Reply = Any  # str | AgentResponse | list[AgentResponseUpdate] | Exception


@dataclass
class Call:
    messages: list[Message]
    session: Any
    options: Any


def reply(
    text: str, *, usage: Usage | None = None, response_id: str | None = None
) -> AgentResponse:
    return AgentResponse(Message.assistant(text), response_id=response_id, usage=usage)


def approval_reply(usage: Usage | None = None) -> AgentResponse:
    call = FunctionCallContent(call_id="c1", name="delete", arguments={"path": "/"})
    request = FunctionApprovalRequestContent(id="c1", function_call=call)
    return AgentResponse(Message("assistant", [request]), usage=usage)


class Inner(loopsim.BaseAgent):
    """Replies from a script (or ``fn(call_index, messages)``) and records every call.

    A reply is a str, an AgentResponse, a list of AgentResponseUpdate (streamed as is;
    non-streaming merges them) or an exception (raised).
    """

    def __init__(
        self,
        replies: Sequence[Reply] | Callable[[int, list[Message]], Reply] = (),
        *,
        name: str | None = "inner",
    ) -> None:
        super().__init__(name=name, description="records calls")
        self.replies = replies
        self.calls: list[Call] = []
        self.created: list[AgentSession] = []
        self.serialized = 0
        self.deserialized: list[AgentSession] = []
        self.streams_closed = 0

    def create_session(self) -> AgentSession:
        session = super().create_session()
        self.created.append(session)
        return session

    def serialize_session(self, session: AgentSession) -> dict[str, Any]:
        self.serialized += 1
        return super().serialize_session(session)

    def deserialize_session(self, data: dict[str, Any]) -> AgentSession:
        session = super().deserialize_session(data)
        self.deserialized.append(session)
        return session

    @property
    def sessions(self) -> list[Any]:
        return [c.session for c in self.calls]

    @property
    def inputs(self) -> list[list[str]]:
        return [[m.text for m in c.messages] for c in self.calls]

    def _next(self, messages: list[Message], session: Any, options: Any) -> Reply:
        index = len(self.calls)
        self.calls.append(Call(list(messages), session, options))
        item = self.replies(index, messages) if callable(self.replies) else self.replies[index]
        if isinstance(item, BaseException):
            raise item
        return item

    async def _run(self, messages: list[Message], session: Any, options: Any) -> AgentResponse:
        item = self._next(messages, session, options)
        if isinstance(item, str):
            return reply(item, response_id=f"resp-{len(self.calls)}")
        if isinstance(item, list):
            return AgentResponse.from_updates(item)
        return item

    async def _run_stream(
        self, messages: list[Message], session: Any, options: Any
    ) -> AsyncIterator[AgentResponseUpdate | AgentResponse]:
        try:
            item = self._next(messages, session, options)
            if isinstance(item, list):
                for update in item:
                    yield update
                return
            if isinstance(item, str):
                item = reply(item, response_id=f"resp-{len(self.calls)}")
            for index, message in enumerate(item.messages):
                yield AgentResponseUpdate(
                    message.role,
                    message.contents,
                    author_name=message.author_name,
                    message_id=message.message_id or f"m{len(self.calls)}-{index}",
                    response_id=item.response_id or f"resp-{len(self.calls)}",
                    agent_id=self.id,
                )
            if item.usage is not None:
                yield AgentResponseUpdate(
                    "assistant",
                    [UsageContent(usage=item.usage)],
                    response_id=item.response_id or f"resp-{len(self.calls)}",
                )
        finally:
            self.streams_closed += 1


class Decide(LoopEvaluator):
    """Decides from ``fn(context)``; records the iterations it was asked at."""

    def __init__(self, fn: Callable[[LoopContext], LoopEvaluation]) -> None:
        self.fn = fn
        self.asked: list[int] = []
        self.seen_feedback: list[list[str | None]] = []

    async def evaluate(self, context: LoopContext) -> LoopEvaluation:
        self.asked.append(context.iteration)
        self.seen_feedback.append(list(context.feedback))
        return self.fn(context)


def always(feedback: str | None = None) -> Decide:
    return Decide(lambda ctx: LoopEvaluation.continue_with_feedback(feedback))


def never() -> Decide:
    return Decide(lambda ctx: LoopEvaluation.stop())


def until_text(marker: str, feedback: str | None = None) -> Decide:
    return Decide(
        lambda ctx: (
            LoopEvaluation.stop()
            if marker in ctx.last_response.text
            else LoopEvaluation.continue_with_feedback(feedback)
        )
    )


def options(**kw: Any) -> LoopAgentOptions:
    return LoopAgentOptions(**kw)


def run(agent: Any, messages: Any = "go", backend: str = "asyncio", **kw: Any) -> AgentResponse:
    async def main() -> AgentResponse:
        return await agent.run(messages, **kw)

    return loopsim.simulate(main, backend=backend)


def run_with_events(
    agent: Any, messages: Any = "go", backend: str = "asyncio", **kw: Any
) -> tuple[AgentResponse | BaseException, list[_trace.Event]]:
    events: list[_trace.Event] = []

    async def main() -> AgentResponse | BaseException:
        _trace.current().subscribe(events.append)
        try:
            return await agent.run(messages, **kw)
        except Exception as exc:
            return exc

    result = loopsim.simulate(main, backend=backend)
    return result, [e for e in events if e.kind.startswith(("loop_", "evaluator_"))]


def texts(response: AgentResponse) -> list[str]:
    return [m.text for m in response.messages]


ITERATIONS = ["iteration 1", "iteration 2", "iteration 3"]


# -- construction ----------------------------------------------------------------------


def test_none_inner_agent_is_rejected() -> None:
    with pytest.raises(TypeError, match="inner"):
        LoopAgent(None, never())  # type: ignore[arg-type]


def test_none_evaluators_are_rejected() -> None:
    with pytest.raises(TypeError, match="evaluators"):
        LoopAgent(Inner(), None)  # type: ignore[arg-type]


def test_empty_evaluator_list_is_rejected() -> None:
    with pytest.raises(ValueError, match="evaluators: at least one"):
        LoopAgent(Inner(), [])


def test_none_inside_the_evaluator_list_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"evaluators\[1\] must not be None"):
        LoopAgent(Inner(), [never(), None])  # type: ignore[list-item]


def test_non_evaluator_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"evaluators\[0\] must be a LoopEvaluator"):
        LoopAgent(Inner(), ["stop"])  # type: ignore[list-item]


@pytest.mark.parametrize("cap", [0, -1], ids=["zero", "negative"])
def test_max_iterations_below_one_is_rejected(cap: int) -> None:
    with pytest.raises(ValueError, match="max_iterations must be at least 1"):
        LoopAgent(Inner(), never(), options(max_iterations=cap))


def test_default_cap_is_ten(backend: str) -> None:
    assert LoopAgent.DEFAULT_MAX_ITERATIONS == 10
    inner = Inner(lambda i, m: "working")
    agent = LoopAgent(inner, always())
    run(agent, backend=backend)
    assert len(inner.calls) == 10


def test_evaluators_and_options_are_read_once_at_construction(backend: str) -> None:
    evaluators = [never()]
    opts = options(max_iterations=2)
    inner = Inner(lambda i, m: "working")
    agent = LoopAgent(inner, evaluators, opts)
    evaluators.append(always())
    opts.max_iterations = 5
    opts.on_behalf_of_author_name = "late"
    response = run(agent, backend=backend)
    assert len(inner.calls) == 1
    assert texts(response) == ["working"]


def test_delegates_identity_and_services_to_the_inner_agent() -> None:
    inner = Inner(name="writer")
    agent = LoopAgent(inner, never())
    assert (agent.name, agent.id, agent.description) == ("writer", "writer", "records calls")
    assert agent.get_service(LoopAgent) is agent
    assert agent.get_service(Inner) is inner
    assert "max_iterations=10" in repr(agent)


# -- iteration rules -------------------------------------------------------------------


def test_stop_at_once_calls_the_inner_agent_once(backend: str) -> None:
    inner = Inner(["hello"])
    response = run(LoopAgent(inner, never()), backend=backend)
    assert len(inner.calls) == 1
    assert response.text == "hello"


def test_continues_until_the_predicate_stops(backend: str) -> None:
    inner = Inner(ITERATIONS)
    response = run(LoopAgent(inner, until_text("iteration 3")), backend=backend)
    assert len(inner.calls) == 3
    assert texts(response) == ITERATIONS
    assert response.usage is None


def test_last_response_only(backend: str) -> None:
    inner = Inner(ITERATIONS)
    agent = LoopAgent(
        inner, until_text("iteration 3"), options(non_streaming_returns_last_response_only=True)
    )
    assert texts(run(agent, backend=backend)) == ["iteration 3"]


class TaggedResponse(AgentResponse):
    tag: str = ""


def tagged(text: str, tag: str, usage: Usage) -> TaggedResponse:
    response = TaggedResponse(Message.assistant(text), usage=usage, response_id=f"r-{tag}")
    response.tag = tag
    return response


@pytest.mark.parametrize("last_only", [False, True], ids=["transcript", "last-only"])
def test_derived_response_type_survives_with_summed_usage(backend: str, last_only: bool) -> None:
    inner = Inner(
        [
            tagged("iteration 1", "a", Usage(input_tokens=1, output_tokens=10)),
            tagged("iteration 2", "b", Usage(input_tokens=2, output_tokens=20)),
            tagged("iteration 3", "c", Usage(input_tokens=3, output_tokens=30)),
        ]
    )
    agent = LoopAgent(
        inner,
        until_text("iteration 3"),
        options(non_streaming_returns_last_response_only=last_only),
    )
    response = run(agent, backend=backend)
    assert type(response) is TaggedResponse
    assert response.tag == "c"
    assert response.response_id == "r-c"
    assert response.usage == Usage(input_tokens=6, output_tokens=60)
    assert texts(response) == (["iteration 3"] if last_only else ITERATIONS)
    # the inner agent's object is not changed (upstream mutates it; we copy)
    last = inner.replies[2]  # type: ignore[index]
    assert texts(last) == ["iteration 3"]
    assert last.usage == Usage(input_tokens=3, output_tokens=30)


def test_continue_without_feedback_sends_nothing_new(backend: str) -> None:
    inner = Inner(["one", "two"])
    original = [Message.user("the task")]
    run(LoopAgent(inner, always(), options(max_iterations=2)), original, backend)
    assert inner.calls[0].messages == original
    assert inner.calls[1].messages == []


def test_continue_with_feedback_sends_only_the_feedback(backend: str) -> None:
    inner = Inner(["one", "two"])
    run(LoopAgent(inner, always("custom follow-up"), options(max_iterations=2)), backend=backend)
    assert inner.inputs[1] == ["custom follow-up"]
    assert inner.calls[1].messages[0].role == "user"


def test_continue_with_messages_sends_them_verbatim(backend: str) -> None:
    explicit = [Message.system("sys"), Message.user("explicit")]
    evaluator = Decide(
        lambda ctx: (
            LoopEvaluation.continue_with_messages(explicit)
            if ctx.iteration == 1
            else LoopEvaluation.stop()
        )
    )
    inner = Inner(["one", "two"])
    run(LoopAgent(inner, evaluator), backend=backend)
    assert inner.calls[1].messages == explicit
    assert evaluator.seen_feedback == [[], [None]]


def test_always_continue_stops_at_the_cap(backend: str) -> None:
    inner = Inner(lambda i, m: "working")
    evaluator = always()
    response = run(LoopAgent(inner, evaluator, options(max_iterations=3)), backend=backend)
    assert texts(response) == ["working"] * 3
    assert evaluator.asked == [1, 2]  # not consulted on the capped iteration


def test_cap_of_one_never_asks_the_evaluators(backend: str) -> None:
    inner = Inner(["only"])
    evaluator = always()
    run(LoopAgent(inner, evaluator, options(max_iterations=1)), backend=backend)
    assert (len(inner.calls), evaluator.asked) == (1, [])


def test_pending_approval_request_ends_the_loop(backend: str) -> None:
    inner = Inner([approval_reply(), "never"])
    evaluator = always()
    response = run(LoopAgent(inner, evaluator), backend=backend)
    assert len(inner.calls) == 1
    assert evaluator.asked == []
    assert isinstance(response.messages[0].contents[0], FunctionApprovalRequestContent)


def test_non_fresh_feedback_reaches_the_second_call(backend: str) -> None:
    inner = Inner(["one", "two"])
    run(LoopAgent(inner, always("fix it"), options(max_iterations=2)), backend=backend)
    assert inner.inputs == [["go"], ["fix it"]]


def test_stale_feedback_is_never_resent(backend: str) -> None:
    evaluator = Decide(
        lambda ctx: (
            LoopEvaluation.continue_with_feedback("feedback 1")
            if ctx.iteration == 1
            else LoopEvaluation.continue_with_feedback()
        )
    )
    inner = Inner(["a", "b", "c"])
    run(LoopAgent(inner, evaluator, options(max_iterations=3)), backend=backend)
    assert inner.inputs[1:] == [["feedback 1"], []]


def test_feedback_log_is_shared_across_evaluators(backend: str) -> None:
    producer = Decide(
        lambda ctx: (
            LoopEvaluation.continue_with_feedback(f"fb {ctx.iteration}")
            if ctx.iteration < 3
            else LoopEvaluation.stop()
        )
    )
    observer = never()
    inner = Inner(["a", "b", "c"])
    run(LoopAgent(inner, [producer, observer]), backend=backend)
    assert inner.inputs == [["go"], ["fb 1"], ["fb 2"]]  # latest feedback only
    assert observer.asked == [3]
    assert observer.seen_feedback == [["fb 1", "fb 2"]]


def test_log_holds_none_for_a_continue_with_messages_iteration(backend: str) -> None:
    def decide(ctx: LoopContext) -> LoopEvaluation:
        if ctx.iteration == 1:
            return LoopEvaluation.continue_with_feedback("needs work")
        if ctx.iteration == 2:
            return LoopEvaluation.continue_with_messages([Message.user("explicit")])
        return LoopEvaluation.stop()

    evaluator = Decide(decide)
    run(LoopAgent(Inner(["a", "b", "c"]), evaluator), backend=backend)
    assert evaluator.seen_feedback[-1] == ["needs work", None]


def test_feedback_log_is_read_only() -> None:
    captured: list[LoopContext] = []

    def decide(ctx: LoopContext) -> LoopEvaluation:
        captured.append(ctx)
        return (
            LoopEvaluation.continue_with_feedback("x")
            if ctx.iteration == 1
            else (LoopEvaluation.stop())
        )

    run(LoopAgent(Inner(["a", "b"]), Decide(decide)))
    feedback = captured[0].feedback
    assert not isinstance(feedback, list)
    assert not hasattr(feedback, "append")
    with pytest.raises(TypeError):
        feedback[0] = "y"  # type: ignore[index]
    assert list(feedback) == ["x"]


# -- the context evaluators see ---------------------------------------------------------


def test_context_carries_the_inner_agent_input_options_and_shared_properties(
    backend: str,
) -> None:
    contexts: list[tuple[Any, ...]] = []

    class First(LoopEvaluator):
        async def evaluate(self, context: LoopContext) -> LoopEvaluation:
            context.additional_properties["seen"] = context.additional_properties.get("seen", 0) + 1
            return LoopEvaluation.stop()

    class Second(LoopEvaluator):
        async def evaluate(self, context: LoopContext) -> LoopEvaluation:
            contexts.append(
                (
                    context,
                    context.agent,
                    context.initial_messages,
                    context.run_options,
                    context.iteration,
                    context.last_response.text,
                    dict(context.additional_properties),
                    context.session,
                )
            )
            if context.iteration < 2:
                return LoopEvaluation.continue_with_feedback("again")
            return LoopEvaluation.stop()

    inner = Inner(["one", "two"])
    original = [Message.user("task")]
    run_options = {"temperature": 0}
    run(LoopAgent(inner, [First(), Second()]), original, backend, options=run_options)
    (c1, agent, initial, opts, it1, text1, props1, session1) = contexts[0]
    (c2, _, _, _, it2, text2, props2, session2) = contexts[1]
    assert c1 is c2  # one context per run
    assert agent is inner
    assert initial is original
    assert opts is run_options
    assert [it1, it2] == [1, 2]
    assert [text1, text2] == ["one", "two"]
    assert [props1, props2] == [{"seen": 1}, {"seen": 2}]
    assert session1 is session2 is inner.sessions[0]
    assert [c.options for c in inner.calls] == [run_options, run_options]
    assert all(c.options is run_options for c in inner.calls)


def test_fresh_mode_evaluators_see_the_session_the_iteration_used(backend: str) -> None:
    seen: list[Any] = []
    evaluator = Decide(
        lambda ctx: seen.append(ctx.session) or LoopEvaluation.continue_with_feedback("more")  # type: ignore[func-returns-value]
    )
    inner = Inner(lambda i, m: "x")
    agent = LoopAgent(inner, evaluator, options(max_iterations=3, fresh_context_per_iteration=True))
    run(agent, backend=backend)
    assert seen == inner.sessions[:2]


# -- sessions --------------------------------------------------------------------------


def test_loop_creates_one_session_when_the_caller_passes_none(backend: str) -> None:
    inner = Inner(ITERATIONS)
    run(LoopAgent(inner, until_text("iteration 3")), backend=backend)
    assert len(inner.created) == 1
    assert inner.sessions == [inner.created[0]] * 3  # same object every iteration


def test_caller_session_is_reused_without_snapshots(backend: str) -> None:
    inner = Inner(ITERATIONS)
    session = AgentSession()
    run(LoopAgent(inner, until_text("iteration 3")), backend=backend, session=session)
    assert all(s is session for s in inner.sessions)
    assert (inner.created, inner.serialized, inner.deserialized) == ([], 0, [])


def test_fresh_loop_owned_resends_the_task_with_aggregated_feedback(backend: str) -> None:
    evaluator = Decide(lambda ctx: LoopEvaluation.continue_with_feedback(f"fb {ctx.iteration}"))
    inner = Inner(lambda i, m: "x")
    agent = LoopAgent(inner, evaluator, options(max_iterations=3, fresh_context_per_iteration=True))
    run(agent, "original task", backend)
    assert inner.inputs == [
        ["original task"],
        ["original task", "## Feedback\n\n- fb 1"],
        ["original task", "## Feedback\n\n- fb 1\n- fb 2"],
    ]
    sessions = inner.sessions
    assert len({id(s) for s in sessions}) == 3
    assert sessions == inner.created
    assert inner.serialized == 0


def test_fresh_mode_skips_blank_entries_in_the_aggregate(backend: str) -> None:
    def decide(ctx: LoopContext) -> LoopEvaluation:
        if ctx.iteration == 1:
            return LoopEvaluation.continue_with_feedback()
        if ctx.iteration == 2:
            return LoopEvaluation.continue_with_feedback("only one")
        return LoopEvaluation.stop()

    inner = Inner(lambda i, m: "x")
    agent = LoopAgent(inner, Decide(decide), options(fresh_context_per_iteration=True))
    response = run(agent, "task", backend)
    assert inner.inputs == [["task"], ["task"], ["task", "## Feedback\n\n- only one"]]
    assert texts(response) == ["x", "x", "## Feedback\n\n- only one", "x"]


def test_fresh_caller_session_is_snapshotted_once_and_cloned_per_iteration(backend: str) -> None:
    inner = Inner(lambda i, m: "x")
    session = AgentSession(state={"k": 1})
    agent = LoopAgent(
        inner, always("f"), options(max_iterations=3, fresh_context_per_iteration=True)
    )
    run(agent, backend=backend, session=session)
    assert inner.serialized == 1
    assert len(inner.deserialized) == 2
    assert inner.created == []
    sessions = inner.sessions
    assert sessions[0] is session
    assert sessions[1:] == inner.deserialized
    assert sessions[1] is not sessions[2]
    assert sessions[1].state == {"k": 1}


@pytest.mark.parametrize("caller_session", [False, True], ids=["loop-owned", "caller-session"])
def test_fresh_with_explicit_messages_still_resets_the_session(
    backend: str, caller_session: bool
) -> None:
    evaluator = Decide(
        lambda ctx: LoopEvaluation.continue_with_messages([Message.user("explicit")])
    )
    inner = Inner(lambda i, m: "x")
    agent = LoopAgent(inner, evaluator, options(max_iterations=3, fresh_context_per_iteration=True))
    session = AgentSession() if caller_session else None
    run(agent, "original", backend, session=session)
    assert inner.inputs == [["original"], ["explicit"], ["explicit"]]
    assert len({id(s) for s in inner.sessions}) == 3
    if caller_session:
        assert (inner.serialized, len(inner.deserialized), inner.created) == (1, 2, [])
    else:
        assert (inner.serialized, inner.deserialized, len(inner.created)) == (0, [], 3)


def test_fresh_snapshot_failure_aborts_before_any_call(backend: str) -> None:
    class Unserializable(Inner):
        def serialize_session(self, session: AgentSession) -> dict[str, Any]:
            raise OSError("cannot snapshot")

    inner = Unserializable(["never"])
    agent = LoopAgent(inner, always(), options(fresh_context_per_iteration=True))
    result, events = run_with_events(agent, backend=backend, session=AgentSession())
    assert isinstance(result, OSError)
    assert inner.calls == []
    assert [(e.kind, e.data["reason"]) for e in events] == [("loop_stop", "error")]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync-callback", "async-callback"])
def test_session_created_callback_fires_for_the_loop_owned_session(
    backend: str, is_async: bool
) -> None:
    created: list[Any] = []

    def sync_callback(session: Any) -> None:
        created.append(session)

    async def async_callback(session: Any) -> None:
        await anyio.lowlevel.checkpoint()
        created.append(session)

    inner = Inner(ITERATIONS)
    agent = LoopAgent(
        inner,
        until_text("iteration 3"),
        options(session_created_callback=async_callback if is_async else sync_callback),
    )
    run(agent, backend=backend)
    assert created == inner.created
    assert len(created) == 1


def test_session_created_callback_not_fired_for_a_caller_session(backend: str) -> None:
    created: list[Any] = []
    inner = Inner(ITERATIONS)
    agent = LoopAgent(
        inner, until_text("iteration 3"), options(session_created_callback=created.append)
    )
    run(agent, backend=backend, session=AgentSession())
    assert (len(inner.calls), created) == (3, [])


def test_fresh_loop_owned_callback_fires_per_session_in_use(backend: str) -> None:
    created: list[Any] = []
    inner = Inner(lambda i, m: "x")
    agent = LoopAgent(
        inner,
        always("f"),
        options(
            max_iterations=3,
            fresh_context_per_iteration=True,
            session_created_callback=created.append,
        ),
    )
    run(agent, backend=backend)
    assert created == inner.sessions


def test_fresh_caller_session_callback_fires_only_for_clones(backend: str) -> None:
    created: list[Any] = []
    session = AgentSession()
    inner = Inner(lambda i, m: "x")
    agent = LoopAgent(
        inner,
        always("f"),
        options(
            max_iterations=3,
            fresh_context_per_iteration=True,
            session_created_callback=created.append,
        ),
    )
    run(agent, backend=backend, session=session)
    assert created == inner.sessions[1:]
    assert session not in created


def test_the_loop_never_touches_a_non_fresh_session(backend: str) -> None:
    """Sessions are opaque to the loop: per-iteration cost cannot grow with history."""

    class Opaque:
        def __getattribute__(self, name: str) -> Any:
            raise AssertionError(f"the loop touched session.{name}")

    session = Opaque()
    inner = Inner(lambda i, m: "x")
    agent = LoopAgent(inner, always("more"), options(max_iterations=50))
    response = run(agent, backend=backend, session=session)
    assert len(inner.calls) == 50
    assert len(response.messages) == 99
    assert inner.sessions[-1] is session


# -- several evaluators ----------------------------------------------------------------


def test_first_continue_wins_and_later_evaluators_are_not_asked(backend: str) -> None:
    first = Decide(
        lambda ctx: (
            LoopEvaluation.continue_with_feedback("from first")
            if ctx.iteration == 1
            else LoopEvaluation.stop()
        )
    )
    second = never()
    inner = Inner(["a", "b"])
    run(LoopAgent(inner, [first, second]), backend=backend)
    assert first.asked == [1, 2]
    assert second.asked == [2]


def test_stop_is_not_a_veto(backend: str) -> None:
    first = never()
    second = Decide(
        lambda ctx: (
            LoopEvaluation.continue_with_feedback("from second")
            if ctx.iteration == 1
            else LoopEvaluation.stop()
        )
    )
    inner = Inner(["a", "b"])
    run(LoopAgent(inner, [first, second]), backend=backend)
    assert inner.inputs == [["go"], ["from second"]]


def test_all_stop_means_one_call(backend: str) -> None:
    inner = Inner(["a"])
    run(LoopAgent(inner, [never(), never()]), backend=backend)
    assert len(inner.calls) == 1


def test_ai_judge_gap_becomes_the_next_input(backend: str) -> None:
    judge = loopsim.ScriptedChatClient(
        ['{"answered": false, "gapAnalysis": "the cost estimate is missing"}']
    )
    evaluator = loopsim.AIJudgeLoopEvaluator(judge)
    inner = Inner(["plan", "plan with costs"])
    run(LoopAgent(inner, evaluator, options(max_iterations=2)), backend=backend)
    template = loopsim.AIJudgeLoopEvaluator.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
    assert inner.inputs[1] == [template.replace("{gap_analysis}", "the cost estimate is missing")]


# -- on-behalf-of attribution ----------------------------------------------------------


def test_on_behalf_of_author_name_marks_the_loops_messages(backend: str) -> None:
    inner = Inner(["ack", "ack"])
    agent = LoopAgent(
        inner, always("fix it"), options(max_iterations=2, on_behalf_of_author_name="loop")
    )
    response = run(agent, backend=backend)
    assert texts(response) == ["ack", "fix it", "ack"]
    feedback = response.messages[1]
    assert (feedback.role, feedback.author_name) == ("user", "loop")
    assert feedback.message_id  # a generated id (deterministic, msg-NNNN)
    assert feedback.message_id.startswith("msg-")
    sent = inner.calls[1].messages[0]
    assert (sent.author_name, sent.message_id) == ("loop", feedback.message_id)


def test_explicit_messages_keep_their_own_author(backend: str) -> None:
    evaluator = Decide(
        lambda ctx: LoopEvaluation.continue_with_messages(
            [Message.user("explicit", author_name="evaluator")]
        )
    )
    inner = Inner(["ack", "ack"])
    agent = LoopAgent(inner, evaluator, options(max_iterations=2, on_behalf_of_author_name="loop"))
    response = run(agent, backend=backend)
    assert [(m.text, m.author_name) for m in response.messages] == [
        ("ack", None),
        ("explicit", "evaluator"),
        ("ack", None),
    ]


def test_fresh_mode_surfaces_only_the_feedback_message(backend: str) -> None:
    inner = Inner(["ack", "ack"])
    agent = LoopAgent(
        inner,
        always("fix it"),
        options(
            max_iterations=2, fresh_context_per_iteration=True, on_behalf_of_author_name="loop"
        ),
    )
    response = run(agent, "original", backend)
    assert len(response.messages) == 3
    middle = response.messages[1]
    assert middle.author_name == "loop"
    assert "fix it" in middle.text
    assert all(m.text != "original" for m in response.messages)
    assert inner.inputs[1] == ["original", "## Feedback\n\n- fix it"]
    assert inner.calls[1].messages[1].author_name == "loop"


def test_excluded_on_behalf_of_messages_are_sent_but_not_shown(backend: str) -> None:
    inner = Inner(["ack", "ack"])
    agent = LoopAgent(
        inner, always("fix it"), options(max_iterations=2, exclude_on_behalf_of_messages=True)
    )
    response = run(agent, backend=backend)
    assert texts(response) == ["ack", "ack"]
    assert inner.inputs[1] == ["fix it"]


def test_caller_input_is_not_echoed(backend: str) -> None:
    inner = Inner(["a", "b"])
    response = run(LoopAgent(inner, always("more"), options(max_iterations=2)), "task", backend)
    assert "task" not in texts(response)


# -- usage -----------------------------------------------------------------------------


def usage(i: int, o: int, t: int | None = None) -> Usage:
    return Usage(input_tokens=i, output_tokens=o, total_tokens=i + o if t is None else t)


def test_usage_is_summed_over_iterations(backend: str) -> None:
    inner = Inner(
        [
            reply("a", usage=usage(10, 1)),
            reply("b", usage=usage(20, 2)),
            reply("c", usage=usage(30, 3)),
        ]
    )
    response = run(LoopAgent(inner, always(), options(max_iterations=3)), backend=backend)
    assert response.usage == Usage(input_tokens=60, output_tokens=6, total_tokens=66)


THREE_USAGES = [usage(10, 2), usage(12, 5), usage(20, 8)]  # 42 / 15 / 57


@pytest.mark.parametrize(
    ("last_only", "expected_messages"),
    [(False, 3), (True, 1)],
    ids=["transcript", "last-only"],
)
def test_cap_stopped_and_last_only_runs_sum_usage(
    backend: str, last_only: bool, expected_messages: int
) -> None:
    inner = Inner([reply(str(i), usage=u) for i, u in enumerate(THREE_USAGES)])
    agent = LoopAgent(
        inner,
        always(),
        options(max_iterations=3, non_streaming_returns_last_response_only=last_only),
    )
    response = run(agent, backend=backend)
    assert response.usage == Usage(input_tokens=42, output_tokens=15, total_tokens=57)
    assert len(response.messages) == expected_messages


def test_approval_on_iteration_three_sums_usage(backend: str) -> None:
    inner = Inner(
        [
            reply("a", usage=THREE_USAGES[0]),
            reply("b", usage=THREE_USAGES[1]),
            approval_reply(THREE_USAGES[2]),
        ]
    )
    response = run(LoopAgent(inner, always()), backend=backend)
    assert len(inner.calls) == 3
    assert response.usage == Usage(input_tokens=42, output_tokens=15, total_tokens=57)
    assert any(
        isinstance(c, FunctionApprovalRequestContent) for m in response.messages for c in m.contents
    )


def test_iterations_without_usage_are_skipped(backend: str) -> None:
    inner = Inner(
        [
            reply("a", usage=Usage(input_tokens=4, total_tokens=4)),
            reply("b"),
            reply("c", usage=Usage(input_tokens=10, total_tokens=10)),
        ]
    )
    response = run(LoopAgent(inner, always(), options(max_iterations=3)), backend=backend)
    assert response.usage == Usage(input_tokens=14, total_tokens=14)
    assert response.usage.output_tokens is None


def test_inner_usage_is_never_mutated_or_shared(backend: str) -> None:
    usages = [usage(1, 1), usage(2, 2)]
    responses = [reply("a", usage=usages[0]), reply("b", usage=usages[1])]
    inner = Inner(responses)
    result = run(LoopAgent(inner, always(), options(max_iterations=2)), backend=backend)
    assert usages == [usage(1, 1), usage(2, 2)]
    assert all(result.usage is not u for u in usages)
    assert [r.usage for r in responses] == usages
    assert not any(isinstance(c, UsageContent) for m in result.messages for c in m.contents)


def test_single_iteration_usage_is_a_copy(backend: str) -> None:
    reported = usage(5, 5)
    result = run(LoopAgent(Inner([reply("a", usage=reported)]), never()), backend=backend)
    assert result.usage == reported
    assert result.usage is not reported


def test_provider_specific_counters_are_summed(backend: str) -> None:
    inner = Inner(
        [
            reply(
                "a",
                usage=Usage(
                    input_tokens=100,
                    cached_input_tokens=4,
                    reasoning_tokens=11,
                    additional_counts={"cost": 2},
                ),
            ),
            reply(
                "b",
                usage=Usage(
                    input_tokens=200,
                    cached_input_tokens=5,
                    reasoning_tokens=22,
                    additional_counts={"cost": 4},
                ),
            ),
        ]
    )
    response = run(LoopAgent(inner, always(), options(max_iterations=2)), backend=backend)
    assert response.usage == Usage(
        input_tokens=300, cached_input_tokens=9, reasoning_tokens=33, additional_counts={"cost": 6}
    )


# -- failures and cancellation ---------------------------------------------------------


def test_inner_exception_propagates_unchanged(backend: str) -> None:
    boom = LookupError("inner failed")
    inner = Inner(["a", boom])
    result, events = run_with_events(LoopAgent(inner, always("more")), backend=backend)
    assert result is boom
    assert events[-1].kind == "loop_stop"
    assert (events[-1].data["reason"], events[-1].data["iterations"]) == ("error", 1)


def test_evaluator_exception_propagates_unchanged(backend: str) -> None:
    boom = ValueError("evaluator failed")

    def decide(ctx: LoopContext) -> LoopEvaluation:
        raise boom

    result, events = run_with_events(LoopAgent(Inner(["a"]), Decide(decide)), backend=backend)
    assert result is boom
    assert events[-1].data["reason"] == "error"


def test_non_evaluation_result_is_a_type_error(backend: str) -> None:
    class Wrong(LoopEvaluator):
        async def evaluate(self, context: LoopContext) -> LoopEvaluation:
            return True  # type: ignore[return-value]

    result, _ = run_with_events(LoopAgent(Inner(["a"]), Wrong()), backend=backend)
    assert isinstance(result, TypeError)
    assert "Wrong.evaluate returned bool" in str(result)


def test_cancellation_propagates_and_is_reported(backend: str) -> None:
    class Slow(Inner):
        async def _run(self, messages: list[Message], session: Any, options: Any) -> AgentResponse:
            if self.calls:
                await anyio.sleep(3600)
            return await super()._run(messages, session, options)

    inner = Slow(lambda i, m: "x")
    agent = LoopAgent(inner, always("more"))
    events: list[_trace.Event] = []

    async def main() -> bool:
        _trace.current().subscribe(events.append)
        with anyio.move_on_after(10) as scope:
            await agent.run("go")
        return scope.cancelled_caught

    assert loopsim.simulate(main, backend=backend) is True
    stop = [e for e in events if e.kind == "loop_stop"]
    assert [(e.data["reason"], e.data["iterations"]) for e in stop] == [("cancelled", 1)]


# -- the run report --------------------------------------------------------------------


def report(events: list[_trace.Event]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for e in events:
        if e.kind == "loop_iteration_start":
            rows.append(("start", e.data["loop"], e.data["iteration"]))
        elif e.kind == "evaluator_decision":
            d = e.data
            rows.append(
                (
                    "decision",
                    d["iteration"],
                    d["index"],
                    d["evaluator"],
                    d["decision"],
                    d["feedback"],
                )
            )
        else:
            rows.append(("stop", e.data["loop"], e.data["reason"], e.data["iterations"]))
    return rows


def test_run_report_records_each_decision_and_the_stop_reason(backend: str) -> None:
    first = Decide(
        lambda ctx: (
            LoopEvaluation.continue_with_feedback("again")
            if ctx.iteration == 1
            else LoopEvaluation.stop()
        )
    )
    marker = loopsim.CompletionMarkerLoopEvaluator("DONE")
    inner = Inner(["draft", "final DONE"], name="writer")
    _, events = run_with_events(LoopAgent(inner, [first, marker]), backend=backend)
    assert report(events) == [
        ("start", "writer", 1),
        ("decision", 1, 0, "Decide", "continue", "again"),
        ("start", "writer", 2),
        ("decision", 2, 0, "Decide", "stop", None),
        ("decision", 2, 1, "CompletionMarkerLoopEvaluator", "stop", None),
        ("stop", "writer", "evaluators_stopped", 2),
    ]


@pytest.mark.parametrize(
    ("replies", "cap", "reason", "iterations"),
    [
        pytest.param(["a", "b"], 2, "max_iterations", 2, id="max-iterations"),
        pytest.param([approval_reply()], 5, "approval_pending", 1, id="approval-pending"),
    ],
)
def test_run_report_stop_reasons(
    backend: str, replies: list[Any], cap: int, reason: str, iterations: int
) -> None:
    inner = Inner(replies, name=None)
    _, events = run_with_events(
        LoopAgent(inner, always(), options(max_iterations=cap)), backend=backend
    )
    assert report(events)[-1] == ("stop", "loop", reason, iterations)
    assert not any(
        e.kind == "evaluator_decision" and e.data["iteration"] == iterations for e in events
    )


# -- integration with loopsim.Agent and plain anyio ------------------------------------


@pytest.mark.parametrize(
    ("store", "sees_iteration_one"),
    [
        ("in_memory", False),
        ("service_conversation", True),
        ("service_response_chain", False),
    ],
)
def test_fresh_clones_depend_on_the_history_store(
    backend: str, store: str, sees_iteration_one: bool
) -> None:
    client = loopsim.ScriptedChatClient(["first answer", "second answer"])
    chat = loopsim.Agent(client, name="chat", history_store=store)  # type: ignore[arg-type]

    async def main() -> None:
        session = chat.create_session()
        session.add_messages([Message.user("earlier"), Message.assistant("before")])
        agent = LoopAgent(
            chat, always("fix"), options(max_iterations=2, fresh_context_per_iteration=True)
        )
        await agent.run("task", session=session)

    loopsim.simulate(main, backend=backend)
    second = [m.text for m in client.requests[1].messages]
    assert second[:2] == ["earlier", "before"]
    assert ("first answer" in second) is sees_iteration_one
    assert second[-2:] == ["task", "## Feedback\n\n- fix"]


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
def test_runs_on_plain_anyio_without_the_virtual_clock(anyio_backend: str) -> None:
    inner = Inner(["a", "b DONE"])
    agent = LoopAgent(inner, loopsim.CompletionMarkerLoopEvaluator("DONE"))
    response = anyio.run(agent.run, "go", backend=anyio_backend)
    assert texts(response)[-1] == "b DONE"
