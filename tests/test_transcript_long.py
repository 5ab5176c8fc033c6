"""Rendering and diffing take shortcuts over the messages a request resends (so a long
loop stays linear); these properties hold them to the plain, event-by-event answers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import CompletionMarkerLoopEvaluator, LoopAgent, LoopAgentOptions


def _recorded(iterations: int) -> loopsim.Transcript:
    script = [f"step {i}" for i in range(1, iterations)] + [f"step {iterations} DONE"]
    agent = LoopAgent(
        loopsim.Agent(loopsim.ScriptedChatClient(script), name="worker"),
        CompletionMarkerLoopEvaluator("DONE"),
        LoopAgentOptions(max_iterations=iterations),
    )
    _, transcript = loopsim.record(agent.run, "go")
    # read back: the reader shares one object per message between the requests
    return loopsim.Transcript.from_json(transcript.to_json())


def _unshared(transcript: loopsim.Transcript) -> loopsim.Transcript:
    """The same transcript with every event's data deep-copied (no object shared)."""
    events = [e.model_copy(update={"data": copy.deepcopy(e.data)}) for e in transcript.events]
    return transcript.model_copy(update={"events": events})


def _first_difference(a: loopsim.Transcript, b: loopsim.Transcript) -> int | None:
    pairs = list(zip(a.events, b.events, strict=False))
    for index, (x, y) in enumerate(pairs):
        if (x.kind, x.time, x.data) != (y.kind, y.time, y.data):
            return index
    return None if len(a.events) == len(b.events) else len(pairs)


def _requests(transcript: loopsim.Transcript) -> list[int]:
    return [i for i, e in enumerate(transcript.events) if e.kind == "model_request"]


TRANSCRIPT = _recorded(6)


def test_a_shared_and_an_unshared_copy_render_and_compare_alike() -> None:
    plain = _unshared(TRANSCRIPT)
    assert loopsim.render_text(plain) == loopsim.render_text(TRANSCRIPT)
    assert loopsim.diff_transcripts(TRANSCRIPT, plain) is None
    assert loopsim.diff_transcripts(plain, TRANSCRIPT) is None


@settings(max_examples=60, deadline=None)
@given(data=st.data(), shared=st.booleans(), unshare_left=st.booleans())
def test_the_diff_finds_the_first_changed_message_wherever_it_is(
    data: st.DataObject, shared: bool, unshare_left: bool
) -> None:
    left = _unshared(TRANSCRIPT) if unshare_left else TRANSCRIPT
    changed = _unshared(TRANSCRIPT)
    requests = _requests(changed)
    event = data.draw(st.sampled_from(requests), label="request event")
    messages: list[dict[str, Any]] = changed.events[event].data["messages"]
    position = data.draw(st.integers(0, len(messages) - 1), label="message")
    if shared:
        # one object in every later request that resends it: change them all
        target = messages[position]
        for later in requests:
            for message in changed.events[later].data["messages"]:
                if message == target and message is not target:
                    message["contents"] = [{"type": "text", "text": "edited"}]
        target["contents"] = [{"type": "text", "text": "edited"}]
    else:
        messages[position] = {**messages[position], "role": "system"}
    expected = _first_difference(left, changed)
    divergence = loopsim.diff_transcripts(left, changed)
    assert expected is not None
    assert divergence is not None
    assert divergence.index == expected


def test_a_long_loop_diff_still_sees_an_old_message_changed_late() -> None:
    long = _recorded(60)
    changed = _unshared(long)
    last = _requests(changed)[-1]
    changed.events[last].data["messages"][1]["role"] = "system"  # early message, last request
    divergence = loopsim.diff_transcripts(long, changed)
    assert divergence is not None
    assert divergence.index == last


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_request_that_rewrites_history_shows_from_the_rewritten_message(
    data: st.DataObject,
) -> None:
    changed = _unshared(TRANSCRIPT)
    event = data.draw(st.sampled_from(_requests(changed)[1:]), label="request event")
    messages = changed.events[event].data["messages"]
    position = data.draw(st.integers(0, len(messages) - 2), label="message")
    messages[position] = {**messages[position], "role": "system"}
    line = loopsim.render_text(changed, times="absolute").splitlines()[1 + event]  # header
    assert "model_request" in line
    shown = f"(+{position} earlier)" if position else "earlier)"
    assert ("earlier)" not in line) if not position else (shown in line), line


def _cassette_bytes(calls: int, folder: Path) -> int:
    script = [f"step {i}" for i in range(1, calls)] + [f"step {calls} DONE"]
    cassette = loopsim.Cassette(folder / f"loop{calls}.transcript.json", "all")
    agent = LoopAgent(
        loopsim.Agent(cassette.client("worker", loopsim.ScriptedChatClient(script)), name="worker"),
        CompletionMarkerLoopEvaluator("DONE"),
        LoopAgentOptions(max_iterations=calls),
    )
    loopsim.simulate(agent.run, "go")
    cassette.finish()
    return cassette.path.stat().st_size


def test_cassette_bytes_per_model_call_stay_flat(tmp_path: Path) -> None:
    # Each request resends the whole history; the cassette writes each message once.
    small, large = _cassette_bytes(10, tmp_path) / 10, _cassette_bytes(300, tmp_path) / 300
    assert large <= 1.2 * small, (small, large)
