"""Recording a real agent_framework OpenAI client, then replaying it with no network.

agent_framework's OpenAI chat clients (``agent-framework-openai`` on the ``openai`` SDK)
talk to a small OpenAI-compatible server on 127.0.0.1 (``openai_fake``) that the test
starts and stops. Both APIs (Chat Completions and Responses), streaming and not, each a
tool-call conversation. The recording goes through ``from_chat_client`` +
``RealTimeChatClient`` (real I/O off the virtual clock) + ``RecordingChatClient``; then
the server is stopped and the run is replayed on both engines, with sockets forbidden.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import loopsim
from loopsim import RealTimeChatClient, RecordingChatClient, ReplayChatClient, Transcript

openai_clients = pytest.importorskip(
    "agent_framework_openai", reason="agent-framework-openai is not installed (dev extra)"
)
af = pytest.importorskip("agent_framework", reason="agent-framework-core is not installed")

from openai_fake import FakeOpenAI, running  # noqa: E402

from loopsim.agent_framework import as_chat_client, from_chat_client  # noqa: E402

KEY = "sk-loopsim-test-0123456789abcdefghijklmnop"
QUESTION = "what is 2 + 3?"
CLIENTS = {
    "chat-completions": openai_clients.OpenAIChatCompletionClient,
    "responses": openai_clients.OpenAIChatClient,
}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with running() as fake:
        yield fake


def agent_over(client: loopsim.ChatClient) -> loopsim.Agent:
    return loopsim.Agent(client, name="calc", tools=[loopsim.tool(add)], instructions="be exact")


async def ask(agent: Any, *, stream: bool) -> str:
    if stream:
        updates = [u async for u in agent.run_stream(QUESTION)]
        return loopsim.AgentResponse.from_updates(updates).text
    return str((await agent.run(QUESTION)).text)


def record_real(
    server: FakeOpenAI, api: str, *, stream: bool, **options: Any
) -> tuple[str, Transcript, RecordingChatClient]:
    vendor = CLIENTS[api](model="fake-model", api_key=KEY, base_url=server.base_url)
    real_time = RealTimeChatClient(from_chat_client(vendor), close=vendor.client.close)
    recording = RecordingChatClient(real_time, agent_name="calc", **options)
    agent = agent_over(recording)

    async def main() -> str:
        try:
            return await ask(agent, stream=stream)
        finally:
            await real_time.aclose()

    text, transcript = loopsim.record(main, scenario=f"{api}-{stream}")
    return text, transcript, recording


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
@pytest.mark.parametrize("api", sorted(CLIENTS))
def test_record_a_real_client_then_replay_it_without_network(
    api: str, stream: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running() as server:
        text, transcript, recording = record_real(server, api, stream=stream)
        requests = list(server.requests)
        port = server.server_address[1]
    # It really went over HTTP, to the API asked for, with the tool offered.
    assert text == "2 + 3 = 5"
    assert [path for path, _, _ in requests] == [f"/v1/{_path(api)}"] * 2
    assert all(body.get("stream", False) == stream for _, _, body in requests)
    assert "add" in str(requests[0][2].get("tools"))
    assert [e.kind for e in transcript.events].count("model_request") == 2
    # one tool call, however many chunks the vendor streamed it in
    assert [e.data["name"] for e in transcript.events if e.kind == "tool_call"] == ["add"]
    turns = Transcript.from_turns(recording.turns)
    assert [e.kind for e in turns.events] == ["model_request", "model_response"] * 2
    assert turns.events[1].data["usage"]["input_tokens"] == 11

    path = loopsim.write_transcript(tmp_path / "calc.transcript.json", transcript)
    saved = loopsim.read_transcript(path)

    # The server is down: its port is closed. Replay with sockets forbidden, too.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, _refuse)
    monkeypatch.setattr(socket, "create_connection", _refuse)

    replay = ReplayChatClient(saved, "calc")
    again_text, again = loopsim.record(
        lambda: ask(agent_over(replay), stream=stream), scenario=f"{api}-{stream}"
    )
    assert again_text == text
    assert again.to_json() == saved.to_json()  # identical transcript
    assert loopsim.diff_transcripts(saved, again) is None
    replay.assert_all_played()


@pytest.mark.parametrize("api", sorted(CLIENTS))
def test_a_real_recording_replays_into_the_agent_framework_engine(
    api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running() as server:
        _, transcript, _ = record_real(server, api, stream=False)
    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, _refuse)
    monkeypatch.setattr(socket, "create_connection", _refuse)
    replay = ReplayChatClient(transcript, "calc")  # strict: any drift is a mismatch
    agent = af.Agent(
        client=as_chat_client(replay), name="calc", tools=[add], instructions="be exact"
    )

    async def main() -> str:
        return str((await agent.run(QUESTION)).text)

    # Both engines send a tool's result as the text the model reads ("5"), and name the
    # agent on the messages they keep: the real agent sends exactly the recorded requests.
    assert loopsim.simulate(main) == "2 + 3 = 5"
    replay.assert_all_played()  # both recorded turns answered, none left over
    second = replay.requests[1]
    if api == "responses":
        # The recorded answers name their conversation (the Responses API's response id),
        # and the replay gives it back as the service did: both engines continue that
        # conversation within the run, sending only the tool's result (with its call's
        # vendor properties), so loopsim's recorded requests are the real agent's too.
        assert [m.role for m in second.messages] == ["tool"]
        assert second.options.conversation_id == "resp_1"
    else:  # no conversation named: the history is sent again
        assert [m.role for m in second.messages] == ["user", "assistant", "tool"]
        assert second.options.conversation_id is None


@pytest.fixture
def leaky(server: FakeOpenAI) -> FakeOpenAI:
    server.leak = True  # the answer echoes the Authorization header
    return server


def test_the_api_key_never_reaches_the_file(leaky: FakeOpenAI, tmp_path: Path) -> None:
    text, transcript, recording = record_real(leaky, "chat-completions", stream=False)
    assert KEY in text  # the live answer did carry it ...
    assert KEY in recording.redactor.values  # found on the wrapped vendor client
    for written in (transcript, Transcript.from_turns(recording.turns)):
        path = loopsim.write_transcript(tmp_path / "t.transcript.json", written)
        data = path.read_bytes()
        assert KEY.encode() not in data  # ... the file does not
        assert b"[REDACTED]" in data
        assert b"Bearer" not in data


def test_user_configured_patterns_are_redacted(server: FakeOpenAI, tmp_path: Path) -> None:
    _, transcript, recording = record_real(
        server, "chat-completions", stream=False, secret_patterns=[r"\b5\b"]
    )
    turns = Transcript.from_turns(recording.turns)
    answer = turns.events[-1].data["messages"][0]["contents"][0]["text"]
    assert answer == "2 + 3 = [REDACTED]"
    assert "[REDACTED]" in transcript.to_json()


def test_a_recording_holding_a_secret_is_refused_at_write(tmp_path: Path) -> None:
    agent = loopsim.Agent(loopsim.ScriptedChatClient([f"the key is {KEY}"]), name="a")
    _, transcript = loopsim.record(agent.run, "hi")  # no recording client: nothing redacted
    target = tmp_path / "leak.transcript.json"
    with pytest.raises(loopsim.TranscriptError, match="looks like a secret") as info:
        loopsim.write_transcript(target, transcript)
    assert KEY not in str(info.value)
    assert not target.exists()
    with pytest.raises(loopsim.TranscriptError, match="looks like a secret"):
        loopsim.write_transcript(target, _plain("ticket XY-1234"), secret_patterns=[r"XY-\d+"])
    loopsim.write_transcript(target, _plain("ticket XY-1234"))  # not a secret by default
    assert target.exists()


def _plain(text: str) -> Transcript:
    return loopsim.record(loopsim.Agent(loopsim.ScriptedChatClient([text]), name="a").run, "hi")[1]


def _refuse(*_: Any, **__: Any) -> None:
    msg = "the replay tried to use the network"
    raise AssertionError(msg)


def _path(api: str) -> str:
    return "chat/completions" if api == "chat-completions" else "responses"
