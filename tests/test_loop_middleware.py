"""AgentLoopMiddleware: the Python-style loop (one predicate) on the LoopAgent engine."""

from __future__ import annotations

from typing import Any

import pytest

import loopsim
from loopsim import (
    Agent,
    AgentLoopMiddleware,
    AgentResponse,
    AgentSession,
    FunctionCallContent,
    Message,
    ScriptedChatClient,
    Turn,
    Usage,
    _trace,
)

NUDGE = AgentLoopMiddleware.DEFAULT_NEXT_MESSAGE


def agent_with(
    replies: list[Any], loop: AgentLoopMiddleware, **kw: Any
) -> tuple[Agent, ScriptedChatClient]:
    client = ScriptedChatClient(replies)
    return Agent(client, name="worker", middleware=[loop], **kw), client


def run(agent: Agent, messages: Any = "task", backend: str = "asyncio", **kw: Any) -> AgentResponse:
    return loopsim.simulate(lambda: agent.run(messages, **kw), backend=backend)


def stream(
    agent: Agent, messages: Any = "task", backend: str = "asyncio", **kw: Any
) -> tuple[list[loopsim.AgentResponseUpdate], AgentResponse]:
    async def main() -> tuple[list[loopsim.AgentResponseUpdate], AgentResponse]:
        response_stream = agent.run_stream(messages, **kw)
        updates = [u async for u in response_stream]
        return updates, await response_stream.get_final_response()

    return loopsim.simulate(main, backend=backend)


def request_texts(client: ScriptedChatClient, index: int) -> list[str]:
    return [m.text for m in client.requests[index].messages]


def always(**kw: Any) -> bool:
    return True


# -- construction ----------------------------------------------------------------------


@pytest.mark.parametrize("cap", [0, -1, True, 2.5], ids=["zero", "negative", "bool", "float"])
def test_max_iterations_must_be_none_or_positive(cap: Any) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        AgentLoopMiddleware(always, max_iterations=cap)


def test_constructor_defaults_and_attributes() -> None:
    loop = AgentLoopMiddleware(always)
    assert loop.max_iterations == 10 == AgentLoopMiddleware.DEFAULT_MAX_ITERATIONS
    assert AgentLoopMiddleware(always, max_iterations=None).max_iterations is None
    nxt = lambda **kw: None  # noqa: E731
    loop = AgentLoopMiddleware(
        always,
        max_iterations=3,
        next_message=nxt,
        inject_progress=False,
        fresh_context=True,
        return_final_only=True,
        additional_instructions="be brief",
    )
    assert (loop.should_continue, loop.max_iterations, loop.next_message) == (always, 3, nxt)
    assert (loop.inject_progress, loop.fresh_context, loop.return_final_only) == (False, True, True)
    assert loop.additional_instructions == "be brief"
    with pytest.raises(TypeError, match="should_continue must be callable"):
        AgentLoopMiddleware(None)  # type: ignore[arg-type]


# -- iterations ------------------------------------------------------------------------


def test_always_continue_stops_at_the_cap(backend: str) -> None:
    agent, client = agent_with(["a", "b", "c"], AgentLoopMiddleware(always, max_iterations=3))
    response = run(agent, backend=backend)
    assert isinstance(response, AgentResponse)
    assert len(client.requests) == 3


def test_unbounded_loop_runs_until_the_predicate_stops(backend: str) -> None:
    loop = AgentLoopMiddleware(lambda iteration, **kw: iteration < 12, max_iterations=None)
    agent, client = agent_with([f"r{i}" for i in range(12)], loop)
    run(agent, backend=backend)
    assert len(client.requests) == 12


def test_should_continue_receives_the_loop_arguments(backend: str) -> None:
    calls: list[dict[str, Any]] = []

    def should_continue(**kw: Any) -> bool:
        calls.append(kw)
        return kw["iteration"] < 2

    agent, client = agent_with(["one", "two"], AgentLoopMiddleware(should_continue))
    session = AgentSession()
    run(agent, "start", backend, session=session)
    assert [c["iteration"] for c in calls] == [1, 2]
    assert all(isinstance(c["last_result"], AgentResponse) for c in calls)
    assert [c["last_result"].text for c in calls] == ["one", "two"]
    assert calls[0]["original_messages"][0].text == "start"
    assert calls[0]["session"] is session
    assert calls[0]["agent"] is agent
    assert calls[0]["feedback"] is None
    assert [m.text for m in calls[0]["messages"]] == ["start"]
    assert len(client.requests) == 2


def test_async_should_continue_is_awaited(backend: str) -> None:
    seen: list[int] = []

    async def should_continue(iteration: int, **kw: Any) -> bool:
        seen.append(iteration)
        return iteration < 3

    agent, _ = agent_with(["a", "b", "c"], AgentLoopMiddleware(should_continue))
    run(agent, backend=backend)
    assert seen == [1, 2, 3]


def test_default_next_message_is_the_nudge(backend: str) -> None:
    agent, client = agent_with(["a", "b"], AgentLoopMiddleware(always, max_iterations=2))
    run(agent, "the original task", backend)
    assert "the original task" in request_texts(client, 0)
    assert NUDGE in request_texts(client, 1)


def test_custom_next_message_reaches_the_next_call(backend: str) -> None:
    loop = AgentLoopMiddleware(
        always, max_iterations=2, next_message=lambda **kw: "try another angle"
    )
    agent, client = agent_with(["a", "b"], loop)
    run(agent, backend=backend)
    assert request_texts(client, 1)[-1] == "try another angle"


def test_next_message_none_resends_the_previous_input(backend: str) -> None:
    loop = AgentLoopMiddleware(always, max_iterations=2, next_message=lambda **kw: None)
    agent, client = agent_with(["a", "b"], loop)
    run(agent, "only message", backend)
    assert request_texts(client, 1) == ["only message"]


def test_default_result_aggregates_answers_and_injected_messages(backend: str) -> None:
    loop = AgentLoopMiddleware(always, max_iterations=2, inject_progress=False)
    agent, _ = agent_with(["first answer", "second answer"], loop)
    response = run(agent, backend=backend)
    assert [(m.role, m.text) for m in response.messages] == [
        ("assistant", "first answer"),
        ("user", NUDGE),
        ("assistant", "second answer"),
    ]


def test_return_final_only(backend: str) -> None:
    loop = AgentLoopMiddleware(always, max_iterations=2, return_final_only=True)
    agent, _ = agent_with(
        [
            Turn("first answer", usage=Usage(input_tokens=1)),
            Turn("second answer", usage=Usage(input_tokens=2)),
        ],
        loop,
    )
    response = run(agent, backend=backend)
    assert [m.text for m in response.messages] == ["second answer"]
    assert response.usage == Usage(input_tokens=2)  # upstream: not aggregated


def test_default_result_sums_usage(backend: str) -> None:
    loop = AgentLoopMiddleware(always, max_iterations=2)
    agent, _ = agent_with(
        [Turn("a", usage=Usage(input_tokens=1)), Turn("b", usage=Usage(input_tokens=2))], loop
    )
    assert run(agent, backend=backend).usage == Usage(input_tokens=3)


# -- progress and feedback -------------------------------------------------------------


def test_record_feedback_builds_the_progress_log(backend: str) -> None:
    seen: list[list[str]] = []

    def record_feedback(iteration: int, progress: list[str], **kw: Any) -> str:
        seen.append(list(progress))
        return f"e{iteration}"

    loop = AgentLoopMiddleware(always, max_iterations=3, record_feedback=record_feedback)
    agent, client = agent_with(["a", "b", "c"], loop)
    run(agent, backend=backend)
    assert seen == [[], ["e1"], ["e1", "e2"]]  # called on the capped iteration too
    # without a session the whole log is injected each time
    assert "Progress up to now:\n- e1" in request_texts(client, 1)
    assert "Progress up to now:\n- e1\n- e2" in request_texts(client, 2)


def test_with_a_session_only_the_latest_entry_is_injected(backend: str) -> None:
    loop = AgentLoopMiddleware(
        always, max_iterations=3, record_feedback=lambda iteration, **kw: f"e{iteration}"
    )
    agent, client = agent_with(["a", "b", "c"], loop)
    run(agent, backend=backend, session=AgentSession())
    assert request_texts(client, 2)[-2:] == ["Progress up to now:\n- e2", NUDGE]


def test_without_record_feedback_the_previous_answer_is_echoed(backend: str) -> None:
    agent, client = agent_with(
        ["response to: task", "b"], AgentLoopMiddleware(always, max_iterations=2)
    )
    run(agent, backend=backend)
    assert "Progress up to now:\n- response to: task" in request_texts(client, 1)


def test_tuple_feedback_reaches_record_feedback_and_next_message(backend: str) -> None:
    recorded: list[str | None] = []

    def should_continue(iteration: int, **kw: Any) -> tuple[bool, str]:
        return True, f"feedback-{iteration}"

    def record_feedback(feedback: str | None, **kw: Any) -> str | None:
        recorded.append(feedback)
        return feedback

    loop = AgentLoopMiddleware(
        should_continue,
        max_iterations=3,
        record_feedback=record_feedback,
        next_message=lambda feedback, **kw: f"address: {feedback}",
    )
    agent, client = agent_with(["a", "b", "c"], loop)
    run(agent, backend=backend)
    assert recorded == ["feedback-1", "feedback-2", None]  # None: the cap decided
    assert request_texts(client, 1)[-1] == "address: feedback-1"


def test_plain_bool_means_no_feedback(backend: str) -> None:
    seen: list[Any] = []
    loop = AgentLoopMiddleware(
        always, max_iterations=2, next_message=lambda feedback, **kw: seen.append(feedback)
    )
    agent, _ = agent_with(["a", "b"], loop)
    run(agent, backend=backend)
    assert seen == [None]


def test_without_progress_injection(backend: str) -> None:
    seen: list[list[str]] = []

    def should_continue(progress: list[str], **kw: Any) -> bool:
        seen.append(progress)
        return True

    loop = AgentLoopMiddleware(should_continue, max_iterations=3, inject_progress=False)
    agent, client = agent_with(["response to: task", "b", "c"], loop)
    run(agent, backend=backend)
    assert seen == [[], ["response to: task"]]
    assert not any(
        "Progress so far" in t for r in client.requests for t in [m.text for m in r.messages]
    )


# -- fresh context ---------------------------------------------------------------------


def test_fresh_context_without_a_session_resends_the_task(backend: str) -> None:
    loop = AgentLoopMiddleware(
        always, max_iterations=2, fresh_context=True, record_feedback=lambda **kw: "note-1"
    )
    agent, client = agent_with(["a", "b"], loop)
    run(agent, "original task", backend)
    second = request_texts(client, 1)
    assert second[0] == "original task"
    assert "Progress up to now:\n- note-1" in second


@pytest.mark.parametrize("store", ["in_memory", "service_response_chain"])
def test_fresh_context_restores_the_session_in_place(backend: str, store: str) -> None:
    loop = AgentLoopMiddleware(always, max_iterations=2, fresh_context=True, inject_progress=False)
    agent, client = agent_with(
        ["iteration one answer", "iteration two answer"], loop, history_store=store
    )

    async def main() -> tuple[AgentSession, str, list[str]]:
        session = agent.create_session()
        session.add_messages([Message.user("before"), Message.assistant("earlier answer")])
        session.state["counter"] = 1
        session_id = session.session_id
        await agent.run("task", session=session)
        return session, session_id, [m.text for m in session.history()]

    session, session_id, history = loopsim.simulate(main, backend=backend)
    second = request_texts(client, 1)
    assert second[:2] == ["before", "earlier answer"]
    assert "iteration one answer" not in second
    assert session.session_id == session_id
    assert {k: v for k, v in session.state.items() if k != "in_memory"} == {"counter": 1}
    # the caller's object ends with the final iteration's turn on the baseline
    assert history == ["before", "earlier answer", "task", NUDGE, "iteration two answer"]


def test_non_fresh_session_keeps_every_turn(backend: str) -> None:
    loop = AgentLoopMiddleware(always, max_iterations=2, inject_progress=False)
    agent, client = agent_with(["one", "two"], loop)
    run(agent, backend=backend, session=AgentSession())
    assert request_texts(client, 1) == ["task", "one", NUDGE]


def test_additional_instructions_are_sent_every_fresh_iteration(backend: str) -> None:
    loop = AgentLoopMiddleware(
        always, max_iterations=2, fresh_context=True, additional_instructions="be brief"
    )
    agent, client = agent_with(["a", "b"], loop)
    run(agent, backend=backend)
    for index in (0, 1):
        first = client.requests[index].messages[0]
        assert (first.role, first.text) == ("system", "be brief")


# -- approval, errors, report ----------------------------------------------------------


@loopsim.tool(approval_mode="always_require")
def delete(path: str) -> str:
    return f"deleted {path}"


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
def test_pending_approval_ends_the_loop(backend: str, streaming: bool) -> None:
    asked: list[int] = []
    loop = AgentLoopMiddleware(lambda iteration, **kw: asked.append(iteration) or True)
    call = Message(
        "assistant", [FunctionCallContent(call_id="c1", name="delete", arguments={"path": "/"})]
    )
    agent, client = agent_with([call], loop, tools=[delete])
    if streaming:
        _, response = stream(agent, backend=backend)
    else:
        response = run(agent, backend=backend)
    assert len(client.requests) == 1
    assert asked == []
    assert any(c.type == "function_approval_request" for m in response.messages for c in m.contents)


def test_errors_propagate_unchanged(backend: str) -> None:
    boom = KeyError("model down")
    agent, _ = agent_with(["a", boom], AgentLoopMiddleware(always))
    with pytest.raises(KeyError) as caught:
        run(agent, backend=backend)
    assert caught.value is boom


def test_run_report(backend: str) -> None:
    def keep_going(iteration: int, **kw: Any) -> tuple[bool, str]:
        return iteration < 2, "more please"

    agent, _ = agent_with(["a", "b"], AgentLoopMiddleware(keep_going))
    events: list[_trace.Event] = []

    async def main() -> None:
        _trace.current().subscribe(events.append)
        await agent.run("task")

    loopsim.simulate(main, backend=backend)
    rows = [
        (
            e.kind,
            e.data.get("iteration"),
            e.data.get("evaluator"),
            e.data.get("decision"),
            e.data.get("reason"),
        )
        for e in events
        if e.kind.startswith(("loop_", "evaluator_"))
    ]
    assert rows == [
        ("loop_iteration_start", 1, None, None, None),
        ("evaluator_decision", 1, "keep_going", "continue", None),
        ("loop_iteration_start", 2, None, None, None),
        ("evaluator_decision", 2, "keep_going", "stop", None),
        ("loop_stop", None, None, None, "evaluators_stopped"),
    ]


# -- streaming -------------------------------------------------------------------------


def test_streaming_yields_every_iteration_and_ends_with_the_last(backend: str) -> None:
    loop = AgentLoopMiddleware(always, max_iterations=2, inject_progress=False)
    agent, client = agent_with(["first answer", "second answer"], loop)
    updates, final = stream(agent, backend=backend)
    texts = [u.text for u in updates if u.text]
    assert "".join(texts).startswith("first answer")
    assert "".join(texts).endswith("second answer")
    assert [m.text for m in final.messages] == ["second answer"]
    assert len(client.requests) == 2


def test_streaming_surfaces_the_nudge_as_a_user_update(backend: str) -> None:
    loop = AgentLoopMiddleware(always, max_iterations=2, inject_progress=False)
    agent, _ = agent_with(["a", "b"], loop)
    updates, _ = stream(agent, backend=backend)
    nudges = [u for u in updates if u.role == "user"]
    assert [u.text for u in nudges] == [NUDGE]
    assert nudges[0].response_id is None


def test_streaming_cap(backend: str) -> None:
    agent, client = agent_with(["a", "b", "c"], AgentLoopMiddleware(always, max_iterations=2))
    stream(agent, backend=backend)
    assert len(client.requests) == 2


def test_streaming_marker_stop_with_previous_text_injected(backend: str) -> None:
    loop = AgentLoopMiddleware(lambda last_result, **kw: "DONE" not in last_result.text)
    agent, client = agent_with(["drafting", "all DONE"], loop)
    _, final = stream(agent, backend=backend)
    assert len(client.requests) == 2
    assert "Progress up to now:\n- drafting" in request_texts(client, 1)
    assert final.text == "all DONE"


@pytest.mark.parametrize("fresh", [False, True], ids=["reuse", "fresh"])
@pytest.mark.parametrize("progress", [False, True], ids=["no-progress", "progress"])
def test_streaming_and_non_streaming_send_the_same_inputs(
    backend: str, fresh: bool, progress: bool
) -> None:
    def build() -> tuple[Agent, ScriptedChatClient]:
        loop = AgentLoopMiddleware(
            lambda iteration, **kw: (iteration < 3, f"fb{iteration}"),
            fresh_context=fresh,
            inject_progress=progress,
            next_message=lambda feedback, **kw: f"next: {feedback}",
        )
        return agent_with(["a", "b", "c"], loop)

    agent_a, client_a = build()
    run(agent_a, backend=backend, session=AgentSession(session_id="s"))
    agent_b, client_b = build()
    stream(agent_b, backend=backend, session=AgentSession(session_id="s"))
    assert [request_texts(client_a, i) for i in range(3)] == [
        request_texts(client_b, i) for i in range(3)
    ]
