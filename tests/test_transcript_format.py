"""Transcript format version 2 (each message once, requests refer back), per-kind checks
of the reader, its bounds, and fuzzing of the reader with mutated real transcripts."""

from __future__ import annotations

import copy
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import (
    CompletionMarkerLoopEvaluator,
    LoopAgent,
    LoopAgentOptions,
    ScriptedChatClient,
    Transcript,
    TranscriptError,
    TranscriptLimits,
)
from loopsim._clients._replay import turns_from_events

ROOT = Path(__file__).parent.parent
V1_FIXTURE = ROOT / "tests" / "data" / "transcripts" / "loop_background.v1.transcript.json"
SCENARIOS = ROOT / "scenarios"


def marker_loop(iterations: int) -> LoopAgent:
    script = [f"step {i}" for i in range(1, iterations)] + [f"step {iterations} DONE"]
    return LoopAgent(
        loopsim.Agent(ScriptedChatClient(script), name="worker"),
        CompletionMarkerLoopEvaluator("DONE"),
        LoopAgentOptions(max_iterations=iterations),
    )


def recorded_loop(iterations: int) -> Transcript:
    return loopsim.record(marker_loop(iterations).run, "go")[1]


@cache
def scenario_transcript(name: str) -> Transcript:
    result = loopsim.run_scenario(loopsim.load_scenario(SCENARIOS / f"{name}.loopsim.yaml"))
    assert result.transcript is not None
    return result.transcript


# -- version 2 ---------------------------------------------------------------------------


def test_a_recorded_loop_grows_linearly_on_disk() -> None:
    small, large = recorded_loop(10), recorded_loop(300)
    per_small = len(small.to_json()) / 10
    per_large = len(large.to_json()) / 300
    assert per_large <= 1.2 * per_small, (per_small, per_large)
    # The same run written in full (version 1 style) is quadratic: the references are
    # what keeps it small, not a short run.
    full = sum(len(json.dumps(e.data)) for e in large.events)
    assert full > 20 * len(large.to_json())


def test_requests_refer_to_the_previous_request_and_its_answer() -> None:
    transcript = recorded_loop(3)
    raw = json.loads(transcript.to_json())
    assert raw["version"] == 2
    requests = [e for e in raw["events"] if e["kind"] == "model_request"]
    responses = [e for e in raw["events"] if e["kind"] == "model_response"]
    assert all("role" in m for m in requests[0]["data"]["messages"])  # nothing came before
    second = requests[1]["data"]["messages"]
    assert second[0] == {"ref": requests[0]["seq"], "start": 0, "count": 1}
    # the answer comes back named after its agent (upstream names it once the run is
    # done): a new message, written in full once here
    assert second[1]["role"] == "assistant"
    assert second[1]["author_name"] == "worker"
    assert responses[0]["data"]["messages"][0]["author_name"] is None  # as the model sent it
    assert second[2]["role"] == "user"  # the feedback, written once
    third = requests[2]["data"]["messages"]
    assert third[0] == {"ref": requests[1]["seq"], "start": 0, "count": 3}


@pytest.mark.parametrize(
    "name", ["completion_marker", "tool_calls", "coordinator_first_finisher", "streaming"]
)
def test_round_trip_is_exact_and_requests_are_whole_in_memory(name: str) -> None:
    transcript = scenario_transcript(name)
    text = transcript.to_json()
    again = Transcript.from_json(text)
    assert again == transcript
    assert again.to_json() == text
    for before, after in zip(transcript.events, again.events, strict=True):
        assert after.data == before.data  # references resolved into full requests
    assert loopsim.render_text(again) == loopsim.render_text(transcript)
    assert loopsim.diff_transcripts(transcript, again) is None


def test_version_1_files_are_still_read_and_rewritten_as_version_2(tmp_path: Path) -> None:
    raw = json.loads(V1_FIXTURE.read_text(encoding="utf-8"))
    assert raw["version"] == 1
    old = loopsim.read_transcript(V1_FIXTURE)
    assert [e.data for e in old.events] == [e["data"] for e in raw["events"]]
    path = loopsim.write_transcript(tmp_path / "v2.transcript.json", old)
    assert json.loads(path.read_text(encoding="utf-8"))["version"] == 2
    new = loopsim.read_transcript(path)
    assert new == old
    assert len(path.read_bytes()) < len(V1_FIXTURE.read_bytes())


def test_equal_messages_that_are_not_shared_are_still_written_once() -> None:
    # A transcript built from JSON (no shared objects) dedupes on content ...
    transcript = Transcript.from_json(recorded_loop(20).to_json())
    unshared = Transcript.model_validate(json.loads(json.dumps(transcript.model_dump())))
    assert unshared.to_json() == transcript.to_json()


def test_values_json_tells_apart_are_never_merged_by_a_reference() -> None:
    # 1 == True == 1.0 in Python, not in JSON: a reference would change the value.
    def request(seq: int, value: Any) -> loopsim.TranscriptEvent:
        message = {"role": "user", "contents": [{"type": "text", "text": "x"}], "n": value}
        message = {
            "role": "tool",
            "contents": [{"type": "function_result", "call_id": "c", "result": value}],
        }
        return loopsim.TranscriptEvent(
            seq=seq,
            time=0,
            kind="model_request",
            data={"agent": "a", "session": "s", "messages": [message], "tools": []},
        )

    transcript = Transcript(events=[request(1, 1), request(2, True), request(3, 1.0)])
    again = Transcript.from_json(transcript.to_json())
    results = [e.data["messages"][0]["contents"][0]["result"] for e in again.events]
    assert [type(r) for r in results] == [int, bool, float]


# -- the reader refuses what the renderers, the diff and the replay cannot use ----------

BASE_REQUEST = {"agent": "a", "session": "s", "messages": [], "tools": []}


def one_event(kind: str, data: Any, version: int = 2) -> str:
    return json.dumps(
        {
            "format": "loopsim.transcript",
            "version": version,
            "events": [{"seq": 1, "time": 0, "kind": kind, "data": data}],
        }
    )


@pytest.mark.parametrize(
    ("kind", "data", "match"),
    [
        pytest.param("model_request", {**BASE_REQUEST, "messages": 5}, r"data\.messages: expected a list of messages, got int", id="messages-5"),
        pytest.param("model_request", {**BASE_REQUEST, "messages": ["hi"]}, r"data\.messages\[0\]: expected a message object, got str", id="string-message"),
        pytest.param("model_request", {}, "data.messages: expected a list of messages, got nothing", id="empty-data"),
        pytest.param("model_request", {**BASE_REQUEST, "messages": [{"role": "user", "contents": 3}]}, r"data\.messages\[0\]\.contents", id="bad-contents"),
        pytest.param("model_request", {**BASE_REQUEST, "tools": "search"}, r"data\.tools", id="tools-string"),
        pytest.param("model_request", {**BASE_REQUEST, "agent": 7}, r"data\.agent", id="agent-int"),
        pytest.param("model_response", {"agent": "a", "messages": [], "usage": {"input_tokens": "x"}}, r"data\.usage\.input_tokens", id="usage"),
        pytest.param("tool_call", {"agent": "a", "name": "f"}, r"data\.call_id", id="tool-call-id"),
        pytest.param("loop_stop", {"reason": "max_iterations", "iterations": 2}, r"data\.loop", id="loop-stop-loop"),
        pytest.param("loop_iteration_start", {"loop": "l", "iteration": "2"}, r"data\.iteration", id="iteration-str"),
        pytest.param("evaluator_decision", {"loop": "l", "iteration": 1, "index": 0, "decision": "stop"}, r"data\.evaluator", id="evaluator"),
        pytest.param("task_status", {"task_id": 1, "status": "running"}, r"data\.agent", id="task-agent"),
        pytest.param("clock_jump", {"from": "a", "to": 2}, r"data\.from", id="clock-jump"),
    ],
)  # fmt: skip
def test_each_kind_is_checked_with_its_location(kind: str, data: Any, match: str) -> None:
    with pytest.raises(TranscriptError, match=match) as info:
        Transcript.from_json(one_event(kind, data))
    assert f"events[0] (seq 1, {kind})" in str(info.value)


def request_with(*items: Any) -> dict[str, Any]:
    return {**BASE_REQUEST, "messages": list(items)}


HI = {"role": "user", "contents": [{"type": "text", "text": "hi"}]}


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        pytest.param([{"ref": 2, "start": 0, "count": 1}], "ref 2 is not an earlier", id="forward"),
        pytest.param([{"ref": 1, "start": 0, "count": 2}], r"messages 0\.\.1 are out of range \(event 1 holds 1\)", id="range"),
        pytest.param([{"ref": 1, "start": -1, "count": 1}], "out of range", id="negative"),
        pytest.param([{"ref": 1, "start": 0, "count": 0}], "out of range", id="empty"),
        pytest.param([{"ref": 1, "count": 1}], "exactly the keys ref, start, count", id="keys"),
        pytest.param([{"ref": "1", "start": 0, "count": 1}], "must be integers", id="type"),
        pytest.param([{"ref": True, "start": 0, "count": 1}], "must be integers", id="bool"),
    ],
)  # fmt: skip
def test_bad_references_are_refused_with_their_location(messages: Any, match: str) -> None:
    text = json.dumps(
        {
            "format": "loopsim.transcript",
            "version": 2,
            "events": [
                {"seq": 1, "time": 0, "kind": "model_request", "data": request_with(HI)},
                {"seq": 2, "time": 0, "kind": "model_request", "data": request_with(*messages)},
            ],
        }
    )
    with pytest.raises(TranscriptError, match=match) as info:
        Transcript.from_json(text)
    assert "events[1] (seq 2, model_request): data.messages[0]" in str(info.value)


def test_a_reference_in_a_version_1_file_is_just_an_invalid_message() -> None:
    text = one_event("model_request", request_with({"ref": 1, "start": 0, "count": 1}), 1)
    with pytest.raises(
        TranscriptError, match=r"data\.messages\[0\]\.role: expected a string, got nothing"
    ):
        Transcript.from_json(text)


@pytest.mark.parametrize("version", [0, 3, 99, -1])
def test_other_versions_are_refused(version: int) -> None:
    with pytest.raises(TranscriptError, match=f"version {version}"):
        Transcript.from_json(one_event("x", {}, version))


def test_the_newer_version_message_names_both_loopsims_sensibly() -> None:
    raw = json.loads(one_event("x", {}, 3))
    raw["loopsim_version"] = "9.0.0"
    with pytest.raises(TranscriptError) as info:
        Transcript.from_json(json.dumps(raw))
    text = str(info.value)
    assert "loopsim '9.0.0' wrote it" in text
    assert f"this loopsim ({loopsim.__version__})" in text
    assert "reads versions 1, 2" in text


# -- bounds ------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [150, 5_000, 200_000])
def test_deep_nesting_is_a_clean_error(depth: int) -> None:
    deep = "[" * depth + "]" * depth
    text = one_event("x", {"v": "@"}).replace('"@"', deep)
    with pytest.raises(TranscriptError, match="nested deeper than 100 levels"):
        Transcript.from_json(text)


def test_the_depth_bound_can_be_raised() -> None:
    text = one_event("x", {"v": "@"}).replace('"@"', "[" * 150 + "]" * 150)
    transcript = Transcript.from_json(text, limits=TranscriptLimits(max_depth=200))
    assert transcript.events[0].kind == "x"
    assert loopsim.render_text(transcript).count("[") == 150


def test_size_bound(tmp_path: Path) -> None:
    path = loopsim.write_transcript(tmp_path / "t.transcript.json", recorded_loop(3))
    size = path.stat().st_size
    with pytest.raises(TranscriptError, match=f"{size:,} bytes, more than the 100 read"):
        loopsim.read_transcript(path, limits=TranscriptLimits(max_bytes=100))
    with pytest.raises(TranscriptError, match="more than the 100 read"):
        Transcript.from_json(
            path.read_text(encoding="utf-8"), limits=TranscriptLimits(max_bytes=100)
        )
    assert loopsim.read_transcript(path, limits=TranscriptLimits(max_bytes=size)).events


def test_references_cannot_blow_up_memory() -> None:
    # Each request refers to the whole previous one twice: 2^n messages from n lines.
    events = [{"seq": 1, "time": 0, "kind": "model_request", "data": request_with(HI)}]
    for seq in range(2, 40):
        ref = {"ref": seq - 1, "start": 0, "count": 2 ** (seq - 2)}
        events.append(
            {"seq": seq, "time": 0, "kind": "model_request", "data": request_with(ref, ref)}
        )
    text = json.dumps({"format": "loopsim.transcript", "version": 2, "events": events})
    with pytest.raises(TranscriptError, match="more than 8,000,000 messages"):
        Transcript.from_json(text)
    with pytest.raises(TranscriptError, match="more than 1,000 messages"):
        Transcript.from_json(text, limits=TranscriptLimits(max_messages=1000))


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(constant: str) -> None:
    text = one_event("x", {"v": "@"}).replace('"@"', constant)
    with pytest.raises(TranscriptError, match=f"{constant} is not a JSON number"):
        Transcript.from_json(text)


def test_huge_integers_are_a_clean_error() -> None:
    text = one_event("x", {"v": "@"}).replace('"@"', "9" * 5000)
    with pytest.raises(TranscriptError, match="not valid JSON"):
        Transcript.from_json(text)


# -- fuzzing: mutations of real transcripts ----------------------------------------------

FUZZ_SOURCES = ("completion_marker", "tool_calls", "coordinator_first_finisher", "approval_pending")


@cache
def fuzz_corpus() -> tuple[str, ...]:
    texts = [scenario_transcript(name).to_json() for name in FUZZ_SOURCES]
    texts.append(V1_FIXTURE.read_text(encoding="utf-8"))
    return tuple(texts)


json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.sampled_from(["model_request", "user", "assistant", "text", "function_call", "ref"])
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["ref", "start", "count", "role", "contents", "type", "agent", "x"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, (*prefix, index)))
    return out


@st.composite
def mutated_documents(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(fuzz_corpus()))
    if draw(st.integers(0, 4)) == 0:  # byte level: cut, splice, flip
        data = bytearray(text.encode("utf-8"))
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(data) - 1))
            action = draw(st.sampled_from(["cut", "insert", "flip"]))
            if action == "cut":
                del data[at : at + draw(st.integers(1, 40))]
            elif action == "insert":
                data[at:at] = draw(st.sampled_from([b"{", b"]", b",", b'"', b"\\", b"\xff", b"0"]))
            else:
                data[at] ^= 1 << draw(st.integers(0, 7))
        return data.decode("utf-8", errors="surrogateescape")
    document = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        events = document.get("events") if isinstance(document, dict) else None
        paths = _paths(document)
        if isinstance(events, list) and events and draw(st.booleans()):
            # Aim at event data half the time: that is where the per-kind checks live.
            index = draw(st.integers(0, len(events) - 1))
            paths = [p for p in paths if p[:2] == ("events", index)] or paths
        path = draw(st.sampled_from(paths))
        parent: Any = document
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "wrap", "insert", "swap"]))
        if not path:
            document = draw(json_value)
            continue
        key = path[-1]
        if action == "replace":
            parent[key] = draw(json_value)
        elif action == "delete":
            del parent[key]
        elif action == "wrap":
            parent[key] = [parent[key]] if draw(st.booleans()) else {"x": parent[key]}
        elif action == "insert" and isinstance(parent[key], dict):
            parent[key][draw(st.sampled_from(["ref", "role", "x", "messages"]))] = draw(json_value)
        elif action == "insert" and isinstance(parent[key], list):
            parent[key].insert(draw(st.integers(0, len(parent[key]))), draw(json_value))
        elif isinstance(parent, list) and len(parent) > 1:  # swap two neighbours
            other = (key + 1) % len(parent)
            parent[key], parent[other] = parent[other], parent[key]
    return json.dumps(document, ensure_ascii=False)


def use_everything(transcript: Transcript) -> None:
    """What users do with a transcript the reader accepted: none of it may raise."""
    loopsim.render_text(transcript)
    loopsim.render_text(transcript, max_text=10)
    loopsim.render_mermaid(transcript)
    loopsim.render_timeline(transcript)
    assert loopsim.diff_transcripts(transcript, transcript) is None
    loopsim.diff_transcripts(transcript, Transcript())
    again = Transcript.from_json(transcript.to_json())
    assert again.to_json() == transcript.to_json()
    agents = {e.data.get("agent") for e in transcript.events}
    for agent in sorted(a for a in agents if isinstance(a, str)):
        turns_from_events(transcript.events, agent)
        loopsim.ReplayChatClient(transcript, agent).unplayed  # noqa: B018 - must not raise


@settings(
    deadline=None,
    max_examples=int(os.environ.get("LOOPSIM_FUZZ_EXAMPLES", "150")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=mutated_documents())
def test_fuzz_mutated_transcripts_load_cleanly_or_fail_cleanly(text: str) -> None:
    try:
        transcript = Transcript.from_json(text.encode("utf-8", errors="surrogateescape"))
    except TranscriptError:
        return
    use_everything(transcript)


@pytest.mark.parametrize("text", fuzz_corpus()[:1])
def test_the_fuzz_corpus_itself_loads(text: str) -> None:
    use_everything(Transcript.from_json(text))
    assert copy.deepcopy(json.loads(text))["version"] == 2
