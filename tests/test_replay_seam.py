"""Recording at the model-call seam of a vendor client: the user's tools run on replay.

A vendor client (agent-framework-openai's, on the openai SDK) runs its own
function-invocation loop inside one ``get_response``. ``model_seam`` records below that
loop, one entry per request to the model service, so a replay runs the tools for real:
a tool whose result changed, or that raises, is the first divergence, with the tool
named. The vendor talks to a loopback OpenAI-compatible server (``openai_fake``); both
APIs, streamed and not.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import loopsim

openai_clients = pytest.importorskip(
    "agent_framework_openai", reason="agent-framework-openai is not installed (dev extra)"
)
af = pytest.importorskip("agent_framework", reason="agent-framework-core is not installed")

from openai_fake import running  # noqa: E402

from loopsim.agent_framework import from_chat_client, model_seam  # noqa: E402

KEY = "sk-loopsim-test-0123456789abcdefghijklmnop"
QUESTION = "what is 2 + 3?"
CLIENTS = {
    "chat-completions": openai_clients.OpenAIChatCompletionClient,
    "responses": openai_clients.OpenAIChatClient,
}
APIS = pytest.mark.parametrize("api", sorted(CLIENTS))
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def add_off_by_one(a: int, b: int) -> int:
    """Add two integers."""
    return a + b + 1


def add_raising(a: int, b: int) -> int:
    """Add two integers."""
    msg = "the adder is down"
    raise RuntimeError(msg)


async def ask(agent: Any, *, stream: bool) -> str:
    if stream:
        response = agent.run(QUESTION, stream=True)
        async for _ in response:
            pass
        return str((await response.get_final_response()).text)
    return str((await agent.run(QUESTION)).text)


def run_vendor(
    api: str,
    base_url: str,
    wrap: Callable[[loopsim.ChatClient], loopsim.ChatClient],
    *,
    stream: bool,
    tool: Callable[..., int] = add,
) -> tuple[str, loopsim.Transcript]:
    """The user's production code: af.Agent over the vendor client, its tool a function."""
    vendor = CLIENTS[api](model="fake-model", api_key=KEY, base_url=base_url)
    seam = model_seam(vendor, wrap, name="calc", close=vendor.client.close)
    agent = af.Agent(
        client=vendor,
        name="calc",
        instructions="be exact",
        tools=[af.FunctionTool(func=tool, name="add")],
    )

    async def main() -> str:
        try:
            return await ask(agent, stream=stream)
        finally:
            await seam.aclose()

    return loopsim.record(main, scenario="calc")


def forbid_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        msg = "the replay tried to use the network"
        raise AssertionError(msg)

    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def record_cassette(path: Path, api: str, *, stream: bool) -> list[Any]:
    """Record through a Cassette in mode once; returns what reached the server."""
    with running() as server:
        cassette = loopsim.Cassette(path, "once")
        text, transcript = run_vendor(
            api, server.base_url, lambda real: cassette.client("calc", real), stream=stream
        )
        cassette.finish()
        requests = list(server.requests)
    assert text == "2 + 3 = 5"
    # the vendor's loop ran the tool between the two model calls, on the virtual clock
    assert [e.kind for e in transcript.events] == [
        "model_request",
        "model_response",
        "tool_call",
        "tool_result",
        "model_request",
        "model_response",
    ]
    return requests


@STREAMS
@APIS
def test_each_request_to_the_model_is_one_cassette_entry(
    api: str, stream: bool, tmp_path: Path
) -> None:
    path = tmp_path / "calc.transcript.json"
    requests = record_cassette(path, api, stream=stream)
    assert len(requests) == 2  # two HTTP requests ...
    saved = loopsim.read_transcript(path)
    kinds = [e.kind for e in saved.events]
    assert kinds == ["model_request", "model_response"] * 2  # ... two recorded model calls
    first_answer = saved.events[1].data["messages"][0]["contents"][0]
    assert first_answer["type"] == "function_call"  # the tool call, as received
    assert first_answer["name"] == "add"
    second_request = saved.events[2].data["messages"]
    assert any(c.get("type") == "function_result" for m in second_request for c in m["contents"])
    assert saved.events[0].data["tools"] == ["add"]
    assert saved.events[0].data["instructions"] == "be exact"
    assert saved.events[1].data["usage"]["input_tokens"] == 11
    answers = [saved.events[1].data, saved.events[3].data]
    assert [a["finish_reason"] for a in answers] == ["tool_calls", "stop"]
    ids = [a["response_id"] for a in answers]
    assert ids == (["resp_1", "resp_2"] if api == "responses" else ["chatcmpl_1", "chatcmpl_2"])
    conversation = [a.get("conversation_id") for a in answers]
    assert conversation == (["resp_1", "resp_2"] if api == "responses" else [None, None])
    assert KEY.encode() not in path.read_bytes()


@STREAMS
@APIS
def test_unchanged_code_replays_with_its_tool_run_again(
    api: str, stream: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "calc.transcript.json"
    record_cassette(path, api, stream=stream)
    forbid_network(monkeypatch)
    ran: list[tuple[int, int]] = []

    def add_counted(a: int, b: int) -> int:
        ran.append((a, b))
        return a + b

    cassette = loopsim.Cassette(path, "none")
    text, transcript = run_vendor(
        api,
        "http://127.0.0.1:9/v1",
        lambda real: cassette.client("calc", real),
        stream=stream,
        tool=add_counted,
    )
    cassette.finish()
    assert text == "2 + 3 = 5"
    assert ran == [(2, 3)]  # the user's tool ran in the replay
    assert [e.data["name"] for e in transcript.events if e.kind == "tool_result"] == ["add"]


@pytest.mark.parametrize(
    ("tool", "live"),
    [(add_off_by_one, 'add result #call_add = "6"'), (add_raising, "add error #call_add")],
    ids=["changed-result", "raising"],
)
@STREAMS
@APIS
def test_a_changed_or_raising_tool_is_the_first_divergence(  # noqa: PLR0917 - parametrized
    api: str,
    stream: bool,
    tool: Callable[..., int],
    live: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "calc.transcript.json"
    record_cassette(path, api, stream=stream)
    forbid_network(monkeypatch)
    cassette = loopsim.Cassette(path, "none")
    with pytest.raises(loopsim.ReplayMismatchError) as info:
        run_vendor(
            api,
            "http://127.0.0.1:9/v1",
            lambda real: cassette.client("calc", real),
            stream=stream,
            tool=tool,
        )
    shown = str(info.value)
    # The Responses API continues the service-side conversation (previous_response_id):
    # its second request carries only the tool's result, as it does without loopsim.
    at = 0 if api == "responses" else 2
    assert f'recorded: t=0 session None: message[{at}] tool: add result #call_add = "5"' in shown
    assert f"live:     message[{at}] tool: {live}" in shown
    assert info.value.event_index == 2  # the second model call of the cassette


@STREAMS
@APIS
def test_the_seam_sends_the_model_what_the_vendor_sends_without_it(api: str, stream: bool) -> None:
    bodies: dict[bool, list[Any]] = {}
    for seamed in (False, True):
        with running() as server:
            vendor = CLIENTS[api](model="fake-model", api_key=KEY, base_url=server.base_url)
            seam = (
                model_seam(vendor, loopsim.RecordingChatClient, close=vendor.client.close)
                if seamed
                else None
            )
            agent = af.Agent(client=vendor, name="calc", instructions="be exact", tools=[add])

            async def main(agent: Any = agent, seam: Any = seam, vendor: Any = vendor) -> str:
                try:
                    return await ask(agent, stream=stream)
                finally:
                    if seam is not None:
                        await seam.aclose()  # closes the vendor on its own loop
                    else:
                        await vendor.client.close()

            text = asyncio.run(main()) if not seamed else loopsim.simulate(main)
            assert text == "2 + 3 = 5"
            bodies[seamed] = [body for _, _, body in server.requests]
    assert bodies[True] == bodies[False]  # the same requests on the wire, byte for byte
    if api == "responses":
        assert bodies[True][1]["previous_response_id"] == "resp_1"


def test_a_seam_is_installed_once_and_only_on_a_chat_client() -> None:
    vendor = CLIENTS["responses"](model="m", api_key=KEY, base_url="http://127.0.0.1:9/v1")
    model_seam(vendor, lambda real: real, real_time=False)
    with pytest.raises(ValueError, match="already has a loopsim model seam"):
        model_seam(vendor, lambda real: real)
    with pytest.raises(TypeError, match="needs an agent_framework chat client"):
        model_seam(object(), lambda real: real)
    with pytest.raises(TypeError, match="must return a loopsim ChatClient"):
        model_seam(
            CLIENTS["responses"](model="m", api_key=KEY, base_url="http://127.0.0.1:9/v1"),
            lambda _: object(),  # type: ignore[arg-type,return-value] # deliberately wrong
        )


def _loopsim_engine(
    api: str, base_url: str, cassette: loopsim.Cassette, tool: Callable[..., int]
) -> str:
    """The same program on loopsim's engine: loopsim.Agent runs the tools itself."""
    vendor = CLIENTS[api](model="fake-model", api_key=KEY, base_url=base_url)
    real = loopsim.RealTimeChatClient(from_chat_client(vendor), close=vendor.client.close)
    agent = loopsim.Agent(
        cassette.client("calc", lambda: real),
        name="calc",
        instructions="be exact",
        tools=[loopsim.tool(tool, name="add")],
    )

    async def main() -> str:
        try:
            return str((await agent.run(QUESTION)).text)
        finally:
            await real.aclose()

    return loopsim.simulate(main)


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
def test_both_engines_replay_their_tools_and_catch_a_changed_one(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "calc.transcript.json"

    def run(mode: str, base_url: str, tool: Callable[..., int]) -> str:
        cassette = loopsim.Cassette(path, mode)  # type: ignore[arg-type] # a mode literal
        if engine == "loopsim":
            text = _loopsim_engine("chat-completions", base_url, cassette, tool)
        else:
            wrap = lambda real: cassette.client("calc", real)  # noqa: E731 - one line
            text = run_vendor("chat-completions", base_url, wrap, stream=False, tool=tool)[0]
        cassette.finish()
        return text

    with running() as server:
        assert run("once", server.base_url, add) == "2 + 3 = 5"
    forbid_network(monkeypatch)
    assert run("none", "http://127.0.0.1:9/v1", add) == "2 + 3 = 5"
    with pytest.raises(loopsim.ReplayMismatchError, match=r'tool: add result #call_add = "6"'):
        run("none", "http://127.0.0.1:9/v1", add_off_by_one)


def test_recording_twice_gives_the_same_cassette(tmp_path: Path) -> None:
    files = [tmp_path / folder / "calc.transcript.json" for folder in ("a", "b")]
    for path in files:
        record_cassette(path, "responses", stream=True)
    assert files[0].read_bytes() == files[1].read_bytes()
