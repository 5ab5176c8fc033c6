"""Transcripts and cassettes keep every field of a model's answer (issue 21, item 3).

An answer's ``finish_reason``, ``conversation_id``, ``continuation_token``, ``model``,
``created_at`` and ``additional_properties`` land in its ``model_response`` event when the
answer sets them (and only then: a transcript without them is byte for byte what it
was), a cassette stores them, and its replay gives the code under test an answer equal
field for field, streamed or not. Both engines record the same event for the same turn.
A replay whose answer differs in one of them is a divergence, named; a drift report
names a changed finish reason or model.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import agent_framework as af
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_response_fields_turns import _poll, make_agent

import loopsim
from loopsim import (
    ChatResponse,
    Message,
    ScriptedChatClient,
    Transcript,
    TranscriptEvent,
    Turn,
    Usage,
)
from loopsim._clients import _recording
from loopsim._scenario import load_scenario, run_scenario
from loopsim._transcript._cassette import Cassette
from loopsim._transcript._drift import drift_report
from loopsim._transcript._verdict import Replayed, compare_replay
from loopsim.agent_framework import as_chat_client

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "scenarios" / "recorded_model.loopsim.yaml"
COMMITTED = ROOT / "scenarios" / "cassettes" / "recorded_model.transcript.json"
#: the example's cassette as committed before answers kept these fields (same format)
OLD = (
    Path(__file__).parent
    / "data/transcripts/recorded_model.v2_before_answer_fields.transcript.json"
)
ENGINES = ("loopsim", "agent_framework")
FIELDS = (
    "finish_reason",
    "conversation_id",
    "continuation_token",
    "model",
    "created_at",
    "additional_properties",
)
pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

# -- strategies: answers with every field ---------------------------------------------------

# Plain letters: no text that the secret detectors would redact (redaction is wanted; it
# is not what this property is about).
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz äöéλ", min_size=1, max_size=10)
keys = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | words
)
json_data = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
objects = st.dictionaries(keys, json_data, min_size=1, max_size=3)
moments = st.datetimes(  # hypothesis takes naive bounds; the times are UTC
    min_value=dt.datetime(1970, 1, 1),  # noqa: DTZ001
    max_value=dt.datetime(2100, 1, 1),  # noqa: DTZ001
    timezones=st.none(),
)
# upstream types created_at as a string: its OpenAI clients write "...T...:...Z" with
# microseconds; services also give isoformat() with an offset, or whole seconds
created = st.none() | st.builds(
    lambda moment, style: moment.strftime(style),
    moments,
    st.sampled_from(["%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%S+00:00", "%Y-%m-%dT%H:%M:%SZ"]),
)
usages = st.none() | st.builds(
    Usage, input_tokens=st.integers(0, 10**6), output_tokens=st.integers(0, 10**6)
)


@st.composite
def answers(draw: st.DrawFn) -> ChatResponse:
    texts = draw(st.lists(words, min_size=1, max_size=2))
    return ChatResponse(
        [Message.assistant(text) for text in texts],
        response_id=draw(st.none() | words),
        usage=draw(usages),
        conversation_id=draw(st.none() | words),
        finish_reason=draw(st.none() | st.sampled_from(["stop", "length", "tool_calls"])),
        continuation_token=draw(st.none() | objects),
        model=draw(st.none() | words),
        created_at=draw(created),
        additional_properties=draw(st.none() | objects),
    )


def view(response: ChatResponse) -> dict[str, Any]:
    """Everything the code under test can read of an answer."""
    return {
        "messages": [m.model_dump(mode="json") for m in response.messages],
        "response_id": response.response_id,
        "usage": None if response.usage is None else response.usage.model_dump(mode="json"),
        **{name: getattr(response, name) for name in FIELDS},
    }


def through_a_cassette(answer: ChatResponse, folder: Path, *, streamed: bool) -> ChatResponse:
    """Record ``answer`` into a cassette file, then replay it: what the replay answers."""
    path = folder / "answer.transcript.json"
    path.unlink(missing_ok=True)
    question = [Message.user("hi")]

    async def ask(client: loopsim.ChatClient) -> ChatResponse:
        if streamed:
            updates = [u async for u in client.get_streaming_response(question)]
            return ChatResponse.from_updates(updates)
        return await client.get_response(question)

    with Cassette(path, "once") as recording:  # no file yet: records
        live = loopsim.simulate(ask, recording.client("a", ScriptedChatClient([answer])))
    with Cassette(path, "none") as replaying:  # replays from the file
        again = loopsim.simulate(ask, replaying.client("a", ScriptedChatClient([])))
    assert view(live) == view(answer.model_copy(update=_stamped(live)))  # as the fake gave it
    return again


def _stamped(live: ChatResponse) -> dict[str, Any]:
    # the fake stamps an id on an answer or message that lacks one (so does its replay)
    return {"response_id": live.response_id, "messages": live.messages}


@pytest.mark.parametrize("streamed", [False, True], ids=["response", "stream"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(answer=answers())
def test_a_cassette_gives_back_every_field_of_any_answer(
    answer: ChatResponse, streamed: bool, tmp_path: Path
) -> None:
    again = through_a_cassette(answer, tmp_path, streamed=streamed)
    expected = view(answer)
    got = view(again)
    expected["messages"] = got["messages"]  # ids stamped alike; texts compared below
    expected["response_id"] = answer.response_id or got["response_id"]
    assert [m.text for m in again.messages] == [m.text for m in answer.messages]
    assert got == expected


FULL = ChatResponse(
    [Message("assistant", [loopsim.TextContent(text="done")], message_id="msg_7")],
    response_id="resp_7",
    conversation_id="conv_7",
    finish_reason="length",
    continuation_token={"response_id": "resp_7", "sequence": 3},
    model="model-2026-01",
    created_at="2026-12-02T07:00:00.000000Z",
    additional_properties={"region": "eu", "cost": {"cents": 3}},
)


@pytest.mark.parametrize("dropped", FIELDS)
def test_the_round_trip_catches_a_cassette_that_drops_any_one_field(
    dropped: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert view(through_a_cassette(FULL, tmp_path, streamed=False)) == view(FULL)
    # a recorder that forgets one field: the replay's answer differs in that field only
    kept = tuple(name for name in _recording.ANSWER_FIELDS if name != dropped)
    monkeypatch.setattr(_recording, "ANSWER_FIELDS", kept)
    got, expected = view(through_a_cassette(FULL, tmp_path, streamed=False)), view(FULL)
    assert [k for k in expected if got[k] != expected[k]] == [dropped]


def test_an_answer_without_the_fields_writes_what_it_always_wrote() -> None:
    _, transcript = loopsim.record(loopsim.Agent(ScriptedChatClient(["hi"]), name="a").run, "q")
    (event,) = [e for e in transcript.events if e.kind == "model_response"]
    assert list(event.data) == ["agent", "session", "messages", "usage", "response_id"]


# -- the same event on both engines -----------------------------------------------------------

TURN = Turn(
    ChatResponse("cut short", model="model-2026-01", created_at="2026-12-02T07:00:00Z"),
    response_id="resp-given",
    conversation_id="conv-9",
    finish_reason="length",
    continuation_token={"response_id": "resp-given", "step": 2},
    additional_properties={"region": "eu", "cost": {"cents": 3}},
)


def _answer_events(engine: str, *, streamed: bool) -> list[dict[str, Any]]:
    client = ScriptedChatClient([TURN])
    if engine == "loopsim":
        agent: Any = loopsim.Agent(client, name="writer")

        async def main() -> None:
            if streamed:
                [_ async for _ in agent.run_stream("hi")]
            else:
                await agent.run("hi")

    else:
        agent = af.Agent(client=as_chat_client(client), name="writer")

        async def main() -> None:
            if streamed:
                await agent.run("hi", stream=True).get_final_response()
            else:
                await agent.run("hi")

    _, transcript = loopsim.record(main)
    text = transcript.to_json()
    assert loopsim.Transcript.from_json(text).to_json() == text  # and it reads back
    return [
        {k: v for k, v in e.data.items() if k != "session"}  # (af names no session here)
        for e in transcript.events
        if e.kind == "model_response"
    ]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
def test_both_engines_record_the_same_answer_event_with_every_field(streamed: bool) -> None:
    seen = {engine: _answer_events(engine, streamed=streamed) for engine in ENGINES}
    assert seen["loopsim"] == seen["agent_framework"]
    (data,) = seen["loopsim"]
    assert list(data)[3:] == ["response_id", *FIELDS]  # in this order, after the usage
    assert data["conversation_id"] == "conv-9"
    assert data["continuation_token"] == {"response_id": "resp-given", "step": 2}
    assert data["additional_properties"] == {"region": "eu", "cost": {"cents": 3}}
    assert (data["model"], data["created_at"]) == ("model-2026-01", "2026-12-02T07:00:00Z")


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("name", FIELDS)
def test_the_agent_framework_engine_records_the_answer_agent_framework_received(
    name: str, streamed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A planted conversion that loses one field on the way into agent_framework: the
    # transcript shows the answer the package got, so the loss is seen, not hidden.
    from loopsim.agent_framework import _chat_client, _convert

    fields = _convert._af_response_fields

    def lossy(response: Any) -> dict[str, Any]:
        given = fields(response)
        given[name] = {} if name == "additional_properties" else None
        return given

    monkeypatch.setattr(_convert, "_af_response_fields", lossy)
    assert _chat_client.to_af_chat_response.__module__ == _convert.__name__
    (data,) = _answer_events("agent_framework", streamed=streamed)
    assert name not in data
    (theirs,) = _answer_events("loopsim", streamed=streamed)
    assert name in theirs


def test_a_full_transcript_replays_every_field_on_both_engines() -> None:
    # a recorded run (not a cassette) is a replay source too
    _, recorded = loopsim.record(loopsim.Agent(ScriptedChatClient([TURN]), name="writer").run, "hi")
    for engine in ENGINES:
        replay = loopsim.ReplayChatClient(recorded, "writer")
        agent: Any = (
            loopsim.Agent(replay, name="writer")
            if engine == "loopsim"
            else af.Agent(client=as_chat_client(replay), name="writer")
        )
        response = loopsim.simulate(agent.run, "hi")
        assert str(response.finish_reason) == "length", engine
        assert response.continuation_token == {"response_id": "resp-given", "step": 2}, engine
        assert response.additional_properties == {"region": "eu", "cost": {"cents": 3}}, engine
        assert response.created_at == "2026-12-02T07:00:00Z", engine


# -- old cassettes ------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_an_old_cassette_still_replays_and_the_new_one_gives_the_vendors_fields(
    engine: str, tmp_path: Path
) -> None:
    folder = tmp_path / "scenarios"
    (folder / "cassettes").mkdir(parents=True)
    shutil.copy(EXAMPLE, folder)
    shutil.copy(EXAMPLE.with_name("recorded_model.py"), folder)
    loaded = load_scenario(folder / EXAMPLE.name)
    answers = {}
    for name, cassette_file in (("old", OLD), ("new", COMMITTED)):
        cassette = Cassette(cassette_file, "none")
        result = run_scenario(loaded, models=cassette.client, engine=engine)  # type: ignore[arg-type] # one engine's name
        assert result.passed, result.report()
        cassette.finish()
        assert result.transcript is not None
        answers[name] = [
            {k: v for k, v in e.data.items() if k in FIELDS}
            for e in result.transcript.events
            if e.kind == "model_response"
        ]
    assert answers["old"] == [{"finish_reason": "tool_calls"}, {"finish_reason": "stop"}]
    vendor = {
        "model": "fake-model",  # what the fake OpenAI server answered, as production would
        "created_at": "1970-01-01T00:00:00.000000Z",
        "additional_properties": {"system_fingerprint": None, "logprobs": None},
    }
    assert answers["new"] == [{**old, **vendor} for old in answers["old"]]


# -- what a recording refuses --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"additional_properties": {"when": dt.date(2026, 1, 1)}}, "it is not JSON data"),
        ({"additional_properties": {"pair": (1, 2)}}, "JSON changes it"),
        ({"continuation_token": {"n": float("nan")}}, "it is not JSON data"),
    ],
    ids=["date", "tuple", "nan"],
)
def test_a_field_json_cannot_give_back_is_a_clear_error(
    fields: dict[str, Any], problem: str
) -> None:
    recording = loopsim.RecordingChatClient(ScriptedChatClient([ChatResponse("x", **fields)]))
    with pytest.raises(loopsim.TranscriptError) as raised:
        loopsim.simulate(recording.get_response, [Message.user("hi")])
    (name,) = fields
    assert f"cannot record the {name} of agent None's answer: {problem}" in str(raised.value)


def test_a_secret_in_the_answers_extras_is_redacted(tmp_path: Path) -> None:
    answer = ChatResponse("x", additional_properties={"api_key": "abc12345", "n": 1})
    with Cassette(tmp_path / "c.transcript.json", "once") as cassette:
        loopsim.simulate(cassette.client("a", ScriptedChatClient([answer])).get_response, [])
    text = (tmp_path / "c.transcript.json").read_text(encoding="utf-8")
    assert "abc12345" not in text
    assert json.loads(text)["events"][1]["data"]["additional_properties"] == {
        "api_key": "[REDACTED]",
        "n": 1,
    }


# -- diff, verdict and drift ---------------------------------------------------------------------


def _without(transcript: Transcript, name: str, value: Any = None) -> Transcript:
    """``transcript`` with ``name`` of every answer event removed (or set to ``value``)."""
    events = []
    for event in transcript.events:
        data = dict(event.data)
        if event.kind == "model_response":
            data.pop(name, None)
            if value is not None:
                data[name] = value
        events.append(TranscriptEvent(seq=event.seq, time=event.time, kind=event.kind, data=data))
    return transcript.model_copy(update={"events": events})


def _recorded() -> Transcript:
    return loopsim.record(loopsim.Agent(ScriptedChatClient([TURN]), name="writer").run, "hi")[1]


@pytest.mark.parametrize("name", FIELDS)
def test_a_replay_whose_answer_differs_in_one_field_diverges_naming_it(name: str) -> None:
    recorded = _recorded()
    live = _without(recorded, name)  # the harness dropped it on the way to the code
    verdict = compare_replay(recorded, live)
    assert not verdict.identical
    shown = json.dumps(TURN.response_fields.get(name) or getattr(TURN.item, name), sort_keys=True)
    assert verdict.divergences[0] == (
        "an answer differs from the recording: agent writer session session-0001 at "
        f"recorded event 2: {name} recorded {shown}; live <unset>"
    )
    divergence = loopsim.diff_transcripts(recorded, live)
    assert divergence is not None
    assert divergence.index == 2
    assert divergence.expected_line.endswith(f"  {{{name}: {shown}}}")
    assert divergence.actual_line.endswith(f"  {{{name}: <unset>}}")


def test_a_cassette_replay_whose_answer_differs_diverges_too() -> None:
    recording = loopsim.RecordingChatClient(ScriptedChatClient([TURN]), agent_name="writer")
    loopsim.simulate(loopsim.Agent(recording, name="writer").run, "hi")
    cassette = Transcript.from_turns(recording.turns)
    replayed = loopsim.record(
        loopsim.Agent(loopsim.ReplayChatClient(cassette, "writer"), name="writer").run, "hi"
    )[1]
    assert compare_replay(cassette, replayed).identical
    verdict = compare_replay(cassette, _without(replayed, "finish_reason", "stop"))
    assert verdict.divergences[0].endswith('finish_reason recorded "length"; live "stop"')


def test_drift_names_a_changed_finish_reason_or_model_not_the_service_stamps() -> None:
    recorded = _recorded()
    stamps = _without(
        _without(_without(recorded, "created_at", "2027-01-01T00:00:00Z"), "conversation_id", "c2"),
        "continuation_token",
        {"response_id": "other"},
    )
    assert not drift_report(recorded, stamps).drifted  # a new call always differs in them
    report = drift_report(recorded, _without(recorded, "model", "model-2027-01"))
    assert report.calls[0].changes == (
        'model changed: recorded "model-2026-01"; new "model-2027-01"',
    )
    report = drift_report(recorded, _without(recorded, "finish_reason"))
    assert report.calls[0].changes == ('finish_reason changed: recorded "length"; new <unset>',)
    # a recording made before loopsim kept the model says nothing about it
    assert not drift_report(_without(recorded, "model"), recorded).drifted


# -- a background response and a service conversation, recorded and replayed ------------------


def _polled(engine: str, client: loopsim.ChatClient) -> tuple[str, int, float]:
    result: tuple[str, int, float] = loopsim.simulate(
        _poll(engine, make_agent(engine, client), streamed=False, every=600)
    )
    return result


def test_a_background_response_polls_from_its_cassette_on_both_engines(tmp_path: Path) -> None:
    for engine in ENGINES:
        path = tmp_path / f"{engine}.transcript.json"
        service = loopsim.BackgroundResponseChatClient(
            ScriptedChatClient(["the report"]), duration=1800
        )
        with Cassette(path, "once") as recording:
            recorded = _polled(engine, recording.client("writer", service))
        with Cassette(path, "none") as replaying:  # the tokens come from the file
            replayed = _polled(engine, replaying.client("writer", ScriptedChatClient([])))
        assert recorded == replayed == ("the report", 3, 1800.0), engine
        tokens = [
            e.data.get("continuation_token")
            for e in loopsim.read_transcript(path).events
            if e.kind == "model_response"
        ]
        assert tokens == [{"response_id": "bgresp-0001"}] * 3 + [None], engine
    cassettes = [loopsim.read_transcript(tmp_path / f"{e}.transcript.json") for e in ENGINES]
    calls = [
        [(e.time, e.kind, {k: v for k, v in e.data.items() if k != "session"}) for e in c.events]
        for c in cassettes
    ]
    assert calls[0] == calls[1]  # the same calls and answers (af names no session here)


@pytest.mark.parametrize(
    "name", ["fresh_context_service_conversation", "fresh_context_service_response_chain"]
)
def test_a_service_conversation_records_the_same_answers_on_both_engines(name: str) -> None:
    loaded = load_scenario(ROOT / "scenarios" / f"{name}.loopsim.yaml")
    seen = []
    for engine in ENGINES:
        result = run_scenario(loaded, engine=engine)  # type: ignore[arg-type] # one engine's name
        assert result.passed, result.report()
        assert result.transcript is not None
        seen.append(
            [
                {k: v for k, v in e.data.items() if k in ("response_id", *FIELDS)}
                for e in result.transcript.events
                if e.kind == "model_response"
            ]
        )
    assert seen[0] == seen[1]
    assert all("conversation_id" in answer for answer in seen[0])  # the service's, kept


def test_a_script_that_now_sets_another_field_is_a_model_side_note() -> None:
    recorded = _recorded()
    fresh = _without(recorded, "finish_reason", "stop")  # the scenario's script, edited
    verdict = compare_replay(recorded, Replayed(recorded, fresh=fresh))
    assert verdict.identical  # the replay answered from the recording
    note = 'agent writer at t=0: the scenario\'s model now answers with finish_reason "stop"'
    assert verdict.model_side == (f'{note} (recorded: "length")',)
