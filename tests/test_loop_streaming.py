"""LoopAgent.run_stream: every iteration's updates, surfaced messages, ids, closing."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import anyio
import pytest
from test_loop_agent import (
    Decide,
    Inner,
    always,
    approval_reply,
    never,
    options,
    reply,
    until_text,
)

import loopsim
from loopsim import (
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    LoopAgent,
    LoopContext,
    LoopEvaluation,
    Message,
    Usage,
    _trace,
)


def stream(
    agent: Any, messages: Any = "go", backend: str = "asyncio", **kw: Any
) -> tuple[list[AgentResponseUpdate], AgentResponse]:
    async def main() -> tuple[list[AgentResponseUpdate], AgentResponse]:
        response_stream = agent.run_stream(messages, **kw)
        updates = [u async for u in response_stream]
        return updates, await response_stream.get_final_response()

    return loopsim.simulate(main, backend=backend)


def update_texts(updates: list[AgentResponseUpdate]) -> list[str]:
    return [u.text for u in updates if u.text]


def test_streams_every_iteration(backend: str) -> None:
    inner = Inner(["chunk 1", "chunk 2", "chunk 3"])
    updates, final = stream(LoopAgent(inner, until_text("chunk 3")), backend=backend)
    assert update_texts(updates) == ["chunk 1", "chunk 2", "chunk 3"]
    assert [m.text for m in final.messages] == ["chunk 1", "chunk 2", "chunk 3"]
    assert inner.streams_closed == 3


def test_stream_respects_the_cap(backend: str) -> None:
    inner = Inner(lambda i, m: "working")
    evaluator = always()
    stream(LoopAgent(inner, evaluator, options(max_iterations=4)), backend=backend)
    assert len(inner.calls) == 4
    assert evaluator.asked == [1, 2, 3]


def test_stream_feedback_less_continue_sends_nothing(backend: str) -> None:
    inner = Inner(["a", "b"])
    stream(LoopAgent(inner, always(), options(max_iterations=2)), backend=backend)
    assert inner.calls[1].messages == []


def test_stream_stops_on_a_pending_approval(backend: str) -> None:
    inner = Inner([approval_reply(), "never"])
    evaluator = always()
    updates, _ = stream(LoopAgent(inner, evaluator), backend=backend)
    assert len(inner.calls) == 1
    assert evaluator.asked == []
    assert updates[0].contents[0].type == "function_approval_request"


def test_stream_surfaces_feedback_with_the_driven_iterations_response_id(backend: str) -> None:
    inner = Inner(["ack", "ack"])
    agent = LoopAgent(
        inner, always("fix it"), options(max_iterations=2, on_behalf_of_author_name="loop")
    )
    updates, _ = stream(agent, backend=backend)
    assert update_texts(updates) == ["ack", "fix it", "ack"]
    feedback = updates[1]
    assert (feedback.role, feedback.author_name) == ("user", "loop")
    assert feedback.response_id == "resp-2"
    assert feedback.agent_id is None
    assert feedback.message_id
    assert inner.calls[1].messages[0].message_id == feedback.message_id


def test_stream_excludes_on_behalf_of_messages(backend: str) -> None:
    inner = Inner(["ack", "ack"])
    agent = LoopAgent(
        inner, always("fix it"), options(max_iterations=2, exclude_on_behalf_of_messages=True)
    )
    updates, _ = stream(agent, backend=backend)
    assert update_texts(updates) == ["ack", "ack"]
    assert [m.text for m in inner.calls[1].messages] == ["fix it"]


def test_stream_explicit_messages_keep_author_and_get_ids(backend: str) -> None:
    evaluator = Decide(
        lambda ctx: LoopEvaluation.continue_with_messages(
            [Message.user("explicit", author_name="evaluator")]
        )
    )
    inner = Inner(["ack", "ack"])
    agent = LoopAgent(inner, evaluator, options(max_iterations=2, on_behalf_of_author_name="loop"))
    updates, _ = stream(agent, backend=backend)
    surfaced = updates[1]
    assert (surfaced.text, surfaced.author_name) == ("explicit", "evaluator")
    assert surfaced.message_id
    assert surfaced.response_id == "resp-2"
    assert surfaced.agent_id is None


def test_stream_flushes_feedback_even_when_the_iteration_yields_nothing(backend: str) -> None:
    inner = Inner(["ack", []])
    agent = LoopAgent(
        inner, always("fix it"), options(max_iterations=2, on_behalf_of_author_name="loop")
    )
    updates, _ = stream(agent, backend=backend)
    assert update_texts(updates) == ["ack", "fix it"]
    surfaced = updates[-1]
    assert surfaced.author_name == "loop"
    assert surfaced.response_id
    assert surfaced.response_id.startswith("resp-")
    assert surfaced.response_id != updates[0].response_id
    assert surfaced.message_id
    assert surfaced.agent_id is None


def test_merged_stream_sums_usage(backend: str) -> None:
    usages = [Usage(input_tokens=10, output_tokens=2), Usage(input_tokens=12, output_tokens=5)]
    usages.append(Usage(input_tokens=20, output_tokens=8, total_tokens=57))
    usages[0].total_tokens, usages[1].total_tokens, usages[2].total_tokens = 12, 17, 28
    inner = Inner([reply(str(i), usage=u) for i, u in enumerate(usages)])
    _, final = stream(LoopAgent(inner, always(), options(max_iterations=3)), backend=backend)
    assert final.usage == Usage(input_tokens=42, output_tokens=15, total_tokens=57)


def test_evaluators_see_the_merged_iteration_response(backend: str) -> None:
    seen: list[tuple[int, str]] = []

    def decide(ctx: LoopContext) -> LoopEvaluation:
        seen.append((ctx.iteration, ctx.last_response.text))
        return LoopEvaluation.continue_with_feedback("more")

    chunks = [
        AgentResponseUpdate("assistant", "hel", message_id="m1", response_id="r1"),
        AgentResponseUpdate("assistant", "lo", message_id="m1", response_id="r1"),
    ]
    inner = Inner([chunks, "second"])
    stream(LoopAgent(inner, Decide(decide), options(max_iterations=2)), backend=backend)
    assert seen == [(1, "hello")]


def test_a_response_stream_inner_gives_its_final_response(backend: str) -> None:
    """When the inner run is a ResponseStream, its final response is the iteration's."""

    class WithFinal(Inner):
        async def _run_stream(self, messages: Any, session: Any, options: Any) -> Any:
            self.calls.append(type("C", (), {"messages": messages, "session": session})())
            yield AgentResponseUpdate("assistant", "partial", message_id="m", response_id="r")
            yield AgentResponse(Message.assistant("the final word"), value={"ok": True})

    seen: list[Any] = []
    evaluator = Decide(lambda ctx: seen.append(ctx.last_response) or LoopEvaluation.stop())  # type: ignore[func-returns-value]
    stream(LoopAgent(WithFinal(), evaluator), backend=backend)
    assert seen[0].text == "the final word"
    assert seen[0].value == {"ok": True}


def test_stream_sessions_follow_the_same_rules(backend: str) -> None:
    created: list[Any] = []
    inner = Inner(lambda i, m: "x")
    agent = LoopAgent(
        inner,
        always("fb"),
        options(
            max_iterations=3,
            fresh_context_per_iteration=True,
            session_created_callback=created.append,
        ),
    )
    session = AgentSession()
    stream(agent, "task", backend, session=session)
    assert inner.sessions[0] is session
    assert created == inner.sessions[1:]
    assert (inner.serialized, len(inner.deserialized)) == (1, 2)
    assert [[m.text for m in c.messages] for c in inner.calls] == [
        ["task"],
        ["task", "## Feedback\n\n- fb"],
        ["task", "## Feedback\n\n- fb\n- fb"],
    ]


def test_stopping_early_closes_the_inner_stream_and_reports_cancelled(backend: str) -> None:
    inner = Inner(lambda i, m: "x")
    agent = LoopAgent(inner, always("more"))
    events: list[_trace.Event] = []

    async def main() -> list[str]:
        _trace.current().subscribe(events.append)
        got: list[str] = []
        async with agent.run_stream("go") as response_stream:
            async for update in response_stream:
                got.append(update.text)
                if len(got) == 3:
                    break
        return got

    assert loopsim.simulate(main, backend=backend) == ["x", "more", "x"]
    assert inner.streams_closed == len(inner.calls) == 2
    stops = [e.data for e in events if e.kind == "loop_stop"]
    assert stops == [{"loop": "inner", "reason": "cancelled", "iterations": 1}]


def test_stream_errors_propagate_after_the_updates_already_yielded(backend: str) -> None:
    boom = ConnectionError("model down")
    inner = Inner(["first", boom])
    agent = LoopAgent(inner, always("more"))
    got: list[str] = []

    async def main() -> BaseException | None:
        try:
            async for update in agent.run_stream("go"):
                got.append(update.text)  # noqa: PERF401 - keep what arrived before the failure
        except ConnectionError as exc:
            return exc
        return None

    assert loopsim.simulate(main, backend=backend) is boom
    assert got == ["first"]  # the feedback was pending, never flushed
    assert inner.streams_closed == 2


def test_stream_cancellation_propagates(backend: str) -> None:
    class Slow(Inner):
        async def _run_stream(self, messages: Any, session: Any, options: Any) -> Any:
            async with aclosing(super()._run_stream(messages, session, options)) as items:
                async for item in items:
                    if len(self.calls) == 2:
                        await anyio.sleep(3600)
                    yield item

    inner = Slow(lambda i, m: "x")
    agent = LoopAgent(inner, always("more"))

    async def main() -> tuple[bool, list[str]]:
        got: list[str] = []
        with anyio.move_on_after(5) as scope:
            async for update in agent.run_stream("go"):
                got.append(update.text)  # noqa: PERF401 - keep what arrived before the failure
        return scope.cancelled_caught, got

    cancelled, got = loopsim.simulate(main, backend=backend)
    assert cancelled
    assert got == ["x"]
    assert inner.streams_closed == 2


@pytest.mark.parametrize(
    "opts",
    [
        pytest.param({}, id="defaults"),
        pytest.param({"on_behalf_of_author_name": "loop"}, id="author"),
        pytest.param({"exclude_on_behalf_of_messages": True}, id="exclude"),
        pytest.param({"fresh_context_per_iteration": True}, id="fresh"),
    ],
)
def test_streaming_and_non_streaming_agree(backend: str, opts: dict[str, Any]) -> None:
    def decide(ctx: LoopContext) -> LoopEvaluation:
        if ctx.iteration == 1:
            return LoopEvaluation.continue_with_feedback("fb 1")
        if ctx.iteration == 2:
            return LoopEvaluation.continue_with_messages([Message.user("explicit")])
        if ctx.iteration == 3:
            return LoopEvaluation.continue_with_feedback()
        return LoopEvaluation.stop()

    def build() -> tuple[Inner, Decide, LoopAgent]:
        inner = Inner(lambda i, m: f"answer {i + 1}")
        evaluator = Decide(decide)
        return inner, evaluator, LoopAgent(inner, [never(), evaluator], options(**opts))

    inner_a, eval_a, agent_a = build()
    result = loopsim.simulate(lambda: agent_a.run("task"), backend=backend)
    inner_b, eval_b, agent_b = build()
    _, final = stream(agent_b, "task", backend)
    assert eval_a.asked == eval_b.asked == [1, 2, 3, 4]
    assert inner_a.inputs == inner_b.inputs

    def shape(response: AgentResponse) -> list[tuple[str, str, str | None]]:
        return [(m.role, m.text, m.author_name) for m in response.messages]

    assert shape(result) == shape(final)
