"""Record -> replay: concurrent agents, strict mismatches, lenient drift, unplayed turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import loopsim
from loopsim import (
    Agent,
    FunctionCallContent,
    Message,
    ReplayChatClient,
    ReplayMismatchError,
    ScriptedChatClient,
    Turn,
)


def call(call_id: str, name: str, **arguments: Any) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=call_id, name=name, arguments=arguments)]
    )


@loopsim.tool
def lookup(q: str) -> str:
    return f"found {q}"


def scripts(answer_b: str = "answer B") -> dict[str, list[Any]]:
    return {
        "alpha": [Turn(call("c1", "lookup", q="x"), delay=5), Turn("answer A", delay=10)],
        "beta": [Turn(answer_b, delay=7), Turn("again B", delay=1)],
    }


def program(clients: dict[str, Any]) -> Any:
    alpha = Agent(clients["alpha"], name="alpha", tools=[lookup])
    beta = Agent(clients["beta"], name="beta")

    async def main() -> dict[str, str]:
        out: dict[str, str] = {}

        async def run(agent: Agent, first: str, second: str | None) -> None:
            session = agent.create_session()
            out[agent.name or ""] = (await agent.run(first, session=session)).text
            if second is not None:
                out[agent.name or ""] += (await agent.run(second, session=session)).text

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, alpha, "question a", None)
            tg.start_soon(run, beta, "question b", "more b")
        return out

    return main


def recorded(backend: str, **kw: Any) -> loopsim.Transcript:
    clients = {name: ScriptedChatClient(turns) for name, turns in scripts(**kw).items()}
    return loopsim.record(program(clients), backend=backend, seed=1)[1]


def replaying(transcript: loopsim.Transcript, **kw: Any) -> dict[str, ReplayChatClient]:
    return {name: ReplayChatClient(transcript, name, **kw) for name in ("alpha", "beta")}


def test_concurrent_agents_replay_identically(backend: str) -> None:
    original = recorded(backend)
    clients = replaying(original)
    result, again = loopsim.record(program(clients), backend=backend, seed=1)
    assert result == {"alpha": "answer A", "beta": "answer Bagain B"}
    assert loopsim.diff_transcripts(original, again) is None
    assert again.to_json() == original.to_json()
    for client in clients.values():
        assert client.unplayed == ()
        client.assert_all_played()


def test_replay_from_a_file_on_the_other_backend(tmp_path: Path) -> None:
    path = loopsim.write_transcript(tmp_path / "r.transcript.json", recorded("asyncio"))
    original = loopsim.read_transcript(path)
    again = loopsim.record(program(replaying(original)), backend="trio", seed=1)[1]
    assert loopsim.diff_transcripts(original, again) is None


def test_a_changed_script_is_caught_at_the_right_event(backend: str) -> None:
    original = recorded(backend)
    # beta's first answer differs, so beta's *second* request (its history) differs.
    live = {
        "alpha": ReplayChatClient(original, "alpha"),
        "beta": _FeedThrough(
            ScriptedChatClient(scripts("other B")["beta"]), ReplayChatClient(original, "beta")
        ),
    }
    error = _raised(ReplayMismatchError, program(live), backend)
    expected_index = [
        i
        for i, e in enumerate(original.events)
        if e.kind == "model_request" and e.data["agent"] == "beta"
    ][1]
    assert error.agent == "beta"
    assert error.event_index == expected_index
    assert '"answer B"' in error.expected
    assert '"other B"' in error.actual


def _raised(kind: type[BaseException], fn: Any, backend: str) -> Any:
    try:
        loopsim.simulate(fn, backend=backend)
    except BaseExceptionGroup as group:  # the task group wraps it  # noqa: F821
        matched, _ = group.split(kind)
        if matched is None:
            raise
        leaves = list(matched.exceptions)
        while isinstance(leaves[0], BaseExceptionGroup):  # noqa: F821
            leaves = list(leaves[0].exceptions)
        return leaves[0]
    except kind as exc:
        return exc
    pytest.fail(f"{kind.__name__} not raised")


class _FeedThrough:
    """Answers from ``inner`` but checks every request against a strict replay first."""

    def __init__(self, inner: ScriptedChatClient, check: ReplayChatClient) -> None:
        self.inner, self.check = inner, check

    async def get_response(self, messages: Any, *, options: Any = None) -> Any:
        await self.check.get_response(messages, options=options)
        return await self.inner.get_response(messages, options=options)

    def get_streaming_response(self, messages: Any, *, options: Any = None) -> Any:
        raise NotImplementedError


def test_strict_replay_rejects_a_changed_request(backend: str) -> None:
    original = recorded(backend)
    agent = Agent(ReplayChatClient(original, "beta"), name="beta")
    with pytest.raises(ReplayMismatchError, match="diverged at event") as info:
        loopsim.simulate(agent.run, "a different question", backend=backend)
    assert info.value.event_index == next(
        i
        for i, e in enumerate(original.events)
        if e.kind == "model_request" and e.data["agent"] == "beta"
    )
    assert '"question b"' in info.value.expected
    assert '"a different question"' in info.value.actual


def test_lenient_replay_warns_and_answers(backend: str) -> None:
    original = recorded(backend)
    client = ReplayChatClient(original, "beta", strict=False)
    agent = Agent(client, name="beta")
    with pytest.warns(loopsim.ReplayDriftWarning, match="drifted"):
        result = loopsim.simulate(agent.run, "a different question", backend=backend)
    assert result.text == "answer B"
    assert len(client.unplayed) == 1
    with pytest.raises(ReplayMismatchError, match="never requested"):
        client.assert_all_played()


def test_requests_past_the_recording_fail_loudly(backend: str) -> None:
    original = recorded(backend)
    agent = Agent(ReplayChatClient(original, "alpha"), name="alpha", tools=[lookup])

    async def main() -> None:
        await agent.run("question a")
        await agent.run("question a")

    with pytest.raises(ReplayMismatchError, match="no further recorded turn") as info:
        loopsim.simulate(main, backend=backend)
    assert info.value.event_index is None


def test_recording_client_captures_turns_for_replay(backend: str) -> None:
    inner = ScriptedChatClient([call("c1", "lookup", q="y"), Turn("done", delay=3)])
    recording = loopsim.RecordingChatClient(inner, agent_name="alpha")
    agent = Agent(recording, name="alpha", tools=[lookup])

    async def streamed() -> str:
        updates = [u async for u in agent.run_stream("go")]
        return "".join(u.text for u in updates)

    assert loopsim.simulate(streamed, backend=backend) == "done"
    assert [len(t.messages) for t in recording.turns] == [1, 3]
    assert recording.turns[0].tools == ["lookup"]
    assert recording.turns[1].response is not None
    assert recording.turns[1].response_time == 3.0
    transcript = loopsim.Transcript.from_turns(recording.turns, scenario="prod")
    assert [e.kind for e in transcript.events] == ["model_request", "model_response"] * 2
    replay = ReplayChatClient(transcript, "alpha")
    again = Agent(replay, name="alpha", tools=[lookup])
    assert loopsim.simulate(again.run, "go", backend=backend).text == "done"
    replay.assert_all_played()


def test_recording_client_records_failures_and_can_emit(backend: str) -> None:
    inner = ScriptedChatClient([RuntimeError("model down")])
    recording = loopsim.RecordingChatClient(inner, agent_name="solo", emit=True)
    recorder = loopsim.Recorder()

    async def main() -> None:
        await recording.get_response([Message.user("hi")])

    with pytest.raises(RuntimeError, match="model down"):
        loopsim.simulate(main, backend=backend, trace=recorder.trace)
    assert recording.turns[0].error == "RuntimeError: model down"
    assert [e.kind for e in recorder.transcript.events] == ["model_request", "model_error"]
    assert [e.kind for e in loopsim.Transcript.from_turns(recording.turns).events] == [
        "model_request",
        "model_error",
    ]
    # The replay fails the same way: an error named like the recorded one, same text.
    replay = ReplayChatClient(recorder.transcript, "solo")
    with pytest.raises(loopsim.ReplayedModelError, match=r"^model down$") as info:
        loopsim.simulate(replay.get_response, [Message.user("hi")], backend=backend)
    assert type(info.value).__name__ == "RuntimeError"
    assert info.value.recorded_type == "RuntimeError"


def test_a_call_still_pending_when_the_recording_ended_stays_pending(backend: str) -> None:
    recorder = loopsim.Recorder()
    slow = Agent(ScriptedChatClient([loopsim.Turn("late", delay=1000)]), name="slow")

    async def main() -> str:
        with anyio.move_on_after(60):
            await slow.run("go")
        return "gave up"

    assert loopsim.simulate(main, backend=backend, trace=recorder.trace) == "gave up"
    replay = Agent(ReplayChatClient(recorder.transcript, "slow"), name="slow")

    async def again() -> str:
        with anyio.move_on_after(60):
            await replay.run("go")
        return "gave up"

    clock = loopsim.VirtualClock()
    assert clock.run(again, backend=backend) == "gave up"
    assert clock.elapsed == 60


def test_the_loop_with_background_agents_replays_identically(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    from data.transcripts.make_fixture import build  # type: ignore[import-not-found]

    original = loopsim.read_transcript(
        Path(__file__).parent / "data/transcripts/loop_background.transcript.json"
    )
    clients: list[ReplayChatClient] = []

    def swap(agent: Any) -> None:
        client = ReplayChatClient(original, agent.name)
        clients.append(client)
        agent.client = client

    loop2 = build()
    inner = _inner_agents(loop2)
    for agent in inner:
        swap(agent)

    async def main() -> str:
        return (await loop2.run("Research X")).text

    text, again = loopsim.record(main, backend=backend, seed=7, scenario="loop_background")
    assert text.endswith("DONE")
    assert loopsim.diff_transcripts(original, again) is None
    for client in clients:
        client.assert_all_played()


def _inner_agents(loop: Any) -> list[Agent]:
    found: list[Agent] = []
    parent = next(v for v in vars(loop).values() if isinstance(v, Agent))
    found.append(parent)
    for provider in parent.context_providers:
        for value in vars(provider).values():
            if isinstance(value, dict):
                found.extend(v for v in value.values() if isinstance(v, Agent))
            elif isinstance(value, (list, tuple)):
                found.extend(v for v in value if isinstance(v, Agent))
    return found
