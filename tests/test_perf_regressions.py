"""Behaviour kept by the loop's fast paths (never timing: speed is measured in benchmarks/).

The hot path builds messages and responses without pydantic validation when their inputs
are already valid, runs non-streaming Agent runs as plain coroutines, and streams an
agent without middleware directly. Each test here pins what those paths must keep
exactly as the general ones did: objects equal to validated ones (and validation's
coercions and errors where inputs are not plain), the same ids and events, and the same
laziness.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import loopsim
from loopsim import (
    Agent,
    AgentLoopMiddleware,
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ChatResponseUpdate,
    ErrorContent,
    Message,
    ScriptedChatClient,
    TextContent,
    Usage,
    UsageContent,
)
from loopsim._clients import split_into_updates


class Label(str):
    """A str subclass: validation turns it into a plain str."""

    __slots__ = ()


def _state(model: BaseModel) -> tuple[Any, ...]:
    """Everything a model instance carries, nested models included."""

    def norm(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return _state(value)
        if isinstance(value, list):
            return [norm(v) for v in value]
        return (type(value), value)

    return (
        type(model),
        sorted(model.model_fields_set),
        list(model.__dict__),
        [norm(v) for v in model.__dict__.values()],
        model.__pydantic_extra__,
        model.__pydantic_private__,
    )


@pytest.mark.parametrize("factory", ["user", "assistant", "system"])
@pytest.mark.parametrize("text", ["hi", "", Label("labelled")], ids=["text", "empty", "subclass"])
def test_message_shortcuts_build_exactly_what_validation_builds(factory: str, text: str) -> None:
    role = factory
    made = getattr(Message, factory)(text)
    validated = Message.model_validate({"role": role, "contents": [{"type": "text", "text": text}]})
    assert made == validated
    assert _state(made) == _state(Message(role, [TextContent(text=text)]))
    assert type(made.text) is str
    assert repr(made) == repr(validated)
    assert Message.model_validate_json(made.model_dump_json()) == made


def test_message_shortcuts_keep_validation_errors_and_subclasses() -> None:
    with pytest.raises(ValidationError):
        Message.user(3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Message.user("hi", author_name=5)  # type: ignore[arg-type]

    class Note(Message):
        pass

    assert type(Note.user("hi")) is Note


def test_message_text_of_one_or_many_contents() -> None:
    assert Message("user", ["a"]).text == "a"
    assert Message("user", [ErrorContent(message="x")]).text == ""
    assert Message("user", ["a", ErrorContent(message="x"), "b"]).text == "ab"
    assert Message("user", []).text == ""
    assert AgentResponse([Message.user("a"), Message.assistant("b")]).text == "ab"


def test_from_updates_merges_text_runs_and_keeps_single_pieces() -> None:
    single = TextContent(text="solo")
    updates = [
        AgentResponseUpdate("assistant", ["a", "b"], message_id="m1", agent_id="x"),
        AgentResponseUpdate("assistant", [UsageContent(usage=Usage(input_tokens=1)), "c"]),
        AgentResponseUpdate("assistant", [ErrorContent(message="e"), single]),
        AgentResponseUpdate("user", [UsageContent(usage=Usage(output_tokens=2))]),
        AgentResponseUpdate("user", ["d"], response_id="r"),
    ]
    merged = AgentResponse.from_updates(updates)
    assert [[c.model_dump() for c in m.contents] for m in merged.messages] == [
        [
            {"type": "text", "text": "abc"},
            {"type": "error", "message": "e"},
            {"type": "text", "text": "solo"},
        ],
        [{"type": "text", "text": "d"}],
    ]
    assert merged.messages[0].contents[2] is single  # a run of one keeps its object
    assert merged.messages[0].message_id == "m1"
    assert (merged.response_id, merged.agent_id) == ("r", "x")
    assert merged.usage == Usage(input_tokens=1, output_tokens=2)
    assert _state(merged) == _state(
        AgentResponse(
            [
                Message(
                    "assistant",
                    ["abc", ErrorContent(message="e"), "solo"],
                    message_id="m1",
                ),
                Message("user", ["d"]),
            ],
            response_id="r",
            agent_id="x",
            usage=Usage(input_tokens=1) + Usage(output_tokens=2),
        )
    )


def test_from_updates_of_an_agent_response_needs_agent_updates() -> None:
    # ChatResponseUpdate has no agent id: AgentResponse.from_updates still says so.
    with pytest.raises(AttributeError, match="agent_id"):
        AgentResponse.from_updates([ChatResponseUpdate("assistant", ["a"])])
    merged = ChatResponse.from_updates([AgentResponseUpdate("assistant", ["a"], agent_id="x")])
    assert merged.text == "a"


def test_split_then_merge_restores_the_response() -> None:
    response = ChatResponse(
        [
            Message(
                "assistant", ["  hello  big\n world ", ErrorContent(message="e")], message_id="m"
            ),
            Message("assistant", ["second"], message_id="n", author_name="bob"),
        ],
        response_id="r",
        usage=Usage(total_tokens=3),
    )
    updates = split_into_updates(response)
    assert [u.text for u in updates[:4]] == ["  hello  ", "big\n ", "world ", ""]
    merged = ChatResponse.from_updates(updates)
    assert merged == response
    assert _state(merged) == _state(response)


def test_scripted_reply_with_turn_usage(backend: str) -> None:
    usage = Usage(input_tokens=2)
    client = ScriptedChatClient([loopsim.Turn("hi", usage=usage)])
    response = loopsim.simulate(client.get_response, [Message.user("q")], backend=backend)
    assert response.usage == usage
    assert (response.response_id, response.messages[0].message_id) == ("resp-0001", "msg-0001")
    assert _state(response) == _state(
        ChatResponse(
            [Message("assistant", ["hi"], message_id="msg-0001")],
            response_id="resp-0001",
            usage=usage,
        )
    )


def test_an_agent_id_validation_rejects_still_fails_the_run(backend: str) -> None:
    agent = Agent(ScriptedChatClient(["hi"]), id=7)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="agent_id"):
        loopsim.simulate(agent.run, "go", backend=backend)


def test_stream_without_middleware_makes_its_session_when_iterated(backend: str) -> None:
    recorder = loopsim.Recorder()
    agent = Agent(ScriptedChatClient(["one two"]), name="solo")

    async def main() -> list[str]:
        unused = agent.run_stream("never iterated")
        await unused.aclose()
        kinds = [e.kind for e in recorder.transcript.events]
        stream = agent.run_stream("go")
        kinds.append("--")
        texts = [u.text async for u in stream]
        final = await stream.get_final_response()
        assert final.text == "".join(texts) == "one two"
        return kinds + [e.kind for e in recorder.transcript.events]

    kinds = loopsim.simulate(main, backend=backend, trace=recorder.trace)
    assert kinds == ["--", "session_created", "model_request", "model_response"]


def test_run_and_stream_give_the_same_messages_ids_and_events(backend: str) -> None:
    def run(stream: bool) -> tuple[Any, list[Any]]:
        recorder = loopsim.Recorder()
        client = ScriptedChatClient([f"step {i} of it" for i in range(1, 4)])
        loop = AgentLoopMiddleware(lambda iteration, **_: iteration < 3, max_iterations=5)
        agent = Agent(client, name="worker", middleware=[loop])

        async def main() -> Any:
            if not stream:
                return await agent.run("go")
            response_stream = agent.run_stream("go")
            async for _ in response_stream:
                pass
            return await response_stream.get_final_response()

        final = loopsim.simulate(main, backend=backend, trace=recorder.trace)
        events = [
            (e.kind, e.data.get("session"), e.data.get("iteration"))
            for e in recorder.transcript.events
        ]
        return final, events

    (ran, run_events), (streamed, stream_events) = run(stream=False), run(stream=True)
    assert run_events == stream_events
    assert stream_events[-1][0] == "loop_stop"
    # the streaming final response is the last iteration's; run returns the whole transcript
    assert streamed.messages == ran.messages[-1:]
    assert streamed.response_id == ran.response_id
