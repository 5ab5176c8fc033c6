"""ScriptedChatClient and FunctionChatClient: scripts, delays, streaming, loud failures."""

from __future__ import annotations

import pytest

import loopsim
from loopsim import (
    ChatOptions,
    ChatResponse,
    FunctionCallContent,
    Message,
    ScriptedChatClient,
    ScriptExhaustedError,
    Turn,
    Usage,
)


def ask(client: loopsim.ChatClient, *texts: str, backend: str = "asyncio") -> list[str]:
    async def main() -> list[str]:
        return [(await client.get_response([Message.user(t)])).text for t in texts]

    return loopsim.simulate(main, backend=backend)


def test_script_items_of_every_kind_answer_in_order(backend: str) -> None:
    client = ScriptedChatClient(
        ["one", Message.assistant("two"), ChatResponse("three"), Turn("four", delay=2)], name="bot"
    )
    assert ask(client, "a", "b", "c", "d", backend=backend) == ["one", "two", "three", "four"]
    assert [r.text for r in client.requests] == ["a", "b", "c", "d"]
    assert client.remaining == ()


def test_exception_item_is_raised_on_its_turn(backend: str) -> None:
    boom = ConnectionError("model down")
    client = ScriptedChatClient(["ok", boom, "after"])
    with pytest.raises(ConnectionError, match="model down"):
        ask(client, "a", "b", backend=backend)
    assert [type(x).__name__ for x in client.remaining] == ["str"]


def test_exhausted_script_fails_loudly_naming_client_turn_and_request(backend: str) -> None:
    client = ScriptedChatClient(["only"], name="web_search")
    with pytest.raises(ScriptExhaustedError) as info:
        ask(client, "first", "second question", backend=backend)
    error = info.value
    assert (error.client, error.turn) == ("web_search", 2)
    assert error.last_request.text == "second question"
    assert "web_search" in str(error)
    assert "second question" in str(error)
    assert isinstance(error, RuntimeError)


def test_turn_delay_takes_virtual_time_only(backend: str) -> None:
    client = ScriptedChatClient([Turn("late", delay=3600)])
    clock = loopsim.VirtualClock()

    async def main() -> str:
        return (await client.get_response([Message.user("q")])).text

    assert clock.run(main, backend=backend) == "late"
    assert clock.elapsed == pytest.approx(3600)


def test_turn_usage_replaces_the_reply_usage() -> None:
    client = ScriptedChatClient(
        [Turn(ChatResponse("x", usage=Usage(input_tokens=1)), usage=Usage(input_tokens=9))]
    )

    async def main() -> Usage | None:
        return (await client.get_response([Message.user("q")])).usage

    assert loopsim.simulate(main) == Usage(input_tokens=9)


@pytest.mark.parametrize(
    ("item", "error", "match"),
    [
        (
            3,
            TypeError,
            r"turns\[0\] must be a str, Message, ChatResponse, exception, Fault or Turn",
        ),
    ],
)
def test_bad_script_items_are_rejected_with_their_index(
    item: object, error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        ScriptedChatClient([item])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("delay", "error"), [(-1, ValueError), (float("nan"), ValueError), ("soon", TypeError)]
)
def test_bad_turn_delays_are_rejected(delay: object, error: type) -> None:
    with pytest.raises(error, match="delay"):
        Turn("x", delay=delay)  # type: ignore[arg-type]


def test_responses_get_deterministic_ids() -> None:
    def run() -> list[tuple[str | None, str | None]]:
        client = ScriptedChatClient(["a", "b"])

        async def main() -> list[tuple[str | None, str | None]]:
            out = []
            for text in ("x", "y"):
                response = await client.get_response([Message.user(text)])
                out.append((response.response_id, response.messages[0].message_id))
            return out

        return loopsim.simulate(main)

    first = run()
    assert first == run()
    assert all(rid and mid for rid, mid in first)
    assert len({rid for rid, _ in first}) == 2


def test_streaming_splits_reply_and_merges_back_exactly(backend: str) -> None:
    call = FunctionCallContent(call_id="c1", name="f", arguments={"x": 1})
    reply = ChatResponse(
        Message("assistant", ["Hello there,  world", call]), usage=Usage(output_tokens=3)
    )
    client = ScriptedChatClient([reply, reply])

    async def main() -> tuple[list[loopsim.ChatResponseUpdate], ChatResponse]:
        updates = [u async for u in client.get_streaming_response([Message.user("q")])]
        direct = await client.get_response([Message.user("q")])
        return updates, direct

    updates, direct = loopsim.simulate(main, backend=backend)
    assert len(updates) > 3
    merged = ChatResponse.from_updates(updates)
    assert merged.text == "Hello there,  world"
    assert merged.usage == Usage(output_tokens=3)
    assert [c.type for c in merged.messages[0].contents] == ["text", "function_call"]
    assert [m.contents for m in merged.messages] == [m.contents for m in direct.messages]


def test_requests_record_messages_and_options() -> None:
    client = ScriptedChatClient(["a"])
    options = ChatOptions(instructions="be brief")

    async def main() -> None:
        await client.get_response([Message.system("s"), Message.user("u")], options=options)

    loopsim.simulate(main)
    (request,) = client.requests
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.options.instructions == "be brief"


def test_function_client_accepts_sync_and_async_functions(backend: str) -> None:
    async def async_fn(messages: object, options: ChatOptions) -> Message:
        return Message.assistant("async")

    sync_client = loopsim.FunctionChatClient(lambda m, o: f"n={len(m)}")
    async_client = loopsim.FunctionChatClient(async_fn)
    assert ask(sync_client, "a", backend=backend) == ["n=1"]
    assert ask(async_client, "a", backend=backend) == ["async"]
    assert len(sync_client.requests) == 1


def test_function_client_rejects_bad_return_values() -> None:
    client = loopsim.FunctionChatClient(lambda m, o: 42, name="bad")  # type: ignore[arg-type,return-value]
    with pytest.raises(
        TypeError, match="'bad': fn must return a ChatResponse, Message or str, got int"
    ):
        ask(client, "a")


def test_fake_clients_satisfy_the_protocol() -> None:
    assert isinstance(ScriptedChatClient([]), loopsim.ChatClient)
    assert isinstance(loopsim.FunctionChatClient(lambda m, o: ""), loopsim.ChatClient)


@pytest.mark.parametrize(("latency", "waits"), [("zero", False), ("real", True)])
def test_recording_latency_option_turns_real_time_into_virtual_time(
    latency: str, waits: bool
) -> None:
    import time as real_time

    def slow(messages: object, options: object) -> str:
        real_time.sleep(0.05)  # a real model's latency: real seconds, no virtual ones
        return "late"

    client = loopsim.RecordingChatClient(
        loopsim.FunctionChatClient(slow),
        agent_name="a",
        latency=latency,  # type: ignore[arg-type]
    )
    clock = loopsim.VirtualClock()
    clock.run(loopsim.Agent(client, name="a").run, "hi")
    (turn,) = client.turns
    assert (turn.delay >= 0.05) is waits
    assert (clock.elapsed >= 0.05) is waits
    with pytest.raises(ValueError, match="latency must be 'zero' or 'real'"):
        loopsim.RecordingChatClient(loopsim.FunctionChatClient(slow), latency="fast")  # type: ignore[arg-type]
