"""Scripted turns set response fields, and background responses are polled on virtual time.

``Turn(..., response_id=, conversation_id=, model=, created_at=, finish_reason=,
continuation_token=, additional_properties=)`` and the same keys in a scenario script
reach the model's answer and the agent's response on both engines (loopsim's Agent, and agent_framework's through
``as_chat_client``). ``BackgroundResponseChatClient`` answers ``background=True`` with a
continuation token, and the final answer once ``duration`` virtual seconds have passed.
"""

from __future__ import annotations

import math
import textwrap
import time
from typing import Any

import agent_framework as af
import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_messages import json_values

import loopsim
from loopsim import BackgroundResponseChatClient, ScriptedChatClient, Turn
from loopsim._scenario import load_scenario_text, run_scenario
from loopsim.agent_framework import as_chat_client

ENGINES = ("loopsim", "agent_framework")
pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def make_agent(engine: str, client: Any) -> Any:
    if engine == "loopsim":
        return loopsim.Agent(client, name="writer")
    return af.Agent(client=as_chat_client(client), name="writer")


def run_stream(engine: str, agent: Any, messages: Any, **kwargs: Any) -> Any:
    """One streamed run on either engine: its final response."""
    if engine == "loopsim":

        async def merged() -> Any:
            updates = [u async for u in agent.run_stream(messages, **kwargs)]
            return loopsim.AgentResponse.from_updates(updates)

        return merged()
    return agent.run(messages, stream=True, **kwargs).get_final_response()


# -- Turn: the fields, validated --------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"response_id": 3}, TypeError, "response_id must be a str, got int"),
        ({"conversation_id": ""}, ValueError, "conversation_id must not be empty"),
        ({"finish_reason": b"stop"}, TypeError, "finish_reason must be a str, got bytes"),
        ({"model": 4}, TypeError, "model must be a str, got int"),
        ({"model": ""}, ValueError, "model must not be empty"),
        ({"created_at": 1767225600}, TypeError, "created_at must be a str, got int"),
        ({"created_at": ""}, ValueError, "created_at must not be empty"),
        ({"continuation_token": "tok"}, TypeError, "continuation_token must be a mapping"),
        ({"continuation_token": {1: "x"}}, TypeError, "continuation_token keys must be strings"),
        (
            {"continuation_token": {"n": math.nan}},
            ValueError,
            "continuation_token must be JSON data",
        ),
        ({"additional_properties": ["x"]}, TypeError, "additional_properties must be a mapping"),
        (
            {"additional_properties": {"when": object()}},
            ValueError,
            "additional_properties must be JSON data",
        ),
        ({"usage": {"input_tokens": 1}}, TypeError, "usage must be a loopsim Usage"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_bad_turn_field_is_a_clear_error_naming_it(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        Turn("hi", **kwargs)


@pytest.mark.parametrize("item", [RuntimeError("down"), loopsim.Fault("rate_limit")])
def test_response_fields_need_a_reply(item: Any) -> None:
    with pytest.raises(ValueError, match="finish_reason needs a reply"):
        Turn(item, finish_reason="stop")
    with pytest.raises(ValueError, match="created_at needs a reply"):
        Turn(item, created_at="2026-01-01T00:00:00Z")


def test_a_turn_copies_its_json_objects() -> None:
    token = {"poll": ["a"]}
    turn = Turn("hi", continuation_token=token)
    token["poll"].append("b")
    assert turn.continuation_token == {"poll": ["a"]}


# -- Turn: the fields reach the agent's response, on both engines ------------------------


FIELDS = {
    "response_id": "resp-given",
    "conversation_id": "conv-9",
    "model": "gpt-4o-mini",
    "created_at": "2026-01-01T00:00:00Z",
    "finish_reason": "length",
    "continuation_token": {"response_id": "resp-given", "step": 2},
    "additional_properties": {"region": "eu", "cost": {"cents": 3}},
}


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("engine", ENGINES)
def test_turn_fields_reach_the_agent_response(engine: str, streamed: bool) -> None:
    client = ScriptedChatClient([Turn("cut short", **FIELDS)])
    agent = make_agent(engine, client)

    async def main() -> tuple[Any, Any]:
        session = agent.create_session()
        if streamed:
            response = await run_stream(engine, agent, "hi", session=session)
        else:
            response = await agent.run("hi", session=session)
        return response, session

    response, session = loopsim.simulate(main)
    assert response.text == "cut short"
    assert session.service_session_id == "conv-9"  # the answer made the session service-backed
    assert response.response_id == "resp-given"
    assert str(response.finish_reason) == "length"
    assert response.created_at == "2026-01-01T00:00:00Z"
    assert response.continuation_token == FIELDS["continuation_token"]
    assert response.additional_properties == FIELDS["additional_properties"]


def get_chat_response(engine: str, client: Any, *, streamed: bool) -> Any:
    """One model answer, through the chat client an agent of ``engine`` talks to."""
    if engine == "agent_framework":
        adapted = as_chat_client(client)
        ask = [af.Message("user", ["hi"])]
        if streamed:
            return adapted.get_response(ask, stream=True).get_final_response()
        return adapted.get_response(ask)
    ask_loopsim = [loopsim.Message.user("hi")]
    if streamed:

        async def merged() -> Any:
            updates = [u async for u in client.get_streaming_response(ask_loopsim)]
            return loopsim.ChatResponse.from_updates(updates)

        return merged()
    return client.get_response(ask_loopsim)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("engine", ENGINES)
def test_every_turn_field_is_on_the_chat_answer(engine: str, streamed: bool) -> None:
    # the model answer itself (upstream's ChatResponse on the af engine) carries all of
    # them, `model` included, which an agent's response does not have
    client = ScriptedChatClient([Turn("cut short", **FIELDS)])

    async def main() -> Any:
        return await get_chat_response(engine, client, streamed=streamed)

    answer = loopsim.simulate(main)
    if engine == "agent_framework":
        assert isinstance(answer, af.ChatResponse)
    got = {name: getattr(answer, name) for name in FIELDS}
    got["finish_reason"] = str(got["finish_reason"])
    assert got == FIELDS


def test_a_bare_reply_leaves_the_fields_unset_on_both_engines() -> None:
    for engine in ENGINES:
        agent = make_agent(engine, ScriptedChatClient(["plain"]))
        response = loopsim.simulate(agent.run, "hi")
        assert response.continuation_token is None, engine
        assert response.finish_reason is None, engine
        assert response.created_at is None, engine
        assert not response.additional_properties, engine


@settings(max_examples=20, deadline=None)
@given(
    token=st.dictionaries(st.text(max_size=5), json_values, min_size=1, max_size=3),
    extras=st.dictionaries(st.text(min_size=1, max_size=5), json_values, max_size=3),
    reason=st.text(min_size=1, max_size=10),
)
def test_any_json_token_and_properties_arrive_equal_on_both_engines(
    token: dict[str, Any], extras: dict[str, Any], reason: str
) -> None:
    seen = []
    for engine in ENGINES:
        turn = Turn(
            "ok", continuation_token=token, additional_properties=extras, finish_reason=reason
        )
        agent = make_agent(engine, ScriptedChatClient([turn]))
        response = loopsim.simulate(agent.run, "hi")
        seen.append(
            (response.continuation_token, response.additional_properties, response.finish_reason)
        )
    assert seen[0] == seen[1] == (token, extras, reason)


# -- the same keys in a scenario script ------------------------------------------------------

SCENARIO = """\
    version: 1
    agents:
      writer:
        script:
          - reply: cut short
            response_id: resp-given
            conversation_id: conv-9
            finish_reason: length
            model: gpt-4o-mini
            created_at: 2026-01-01T00:00:00Z
            continuation_token: {response_id: resp-given}
            additional_properties: {region: eu}
    parent: {agent: writer}
    steps: [{run: hi}]
    expect: {response: {equals: cut short}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_scenario_script_fields_reach_the_response(engine: str) -> None:
    result = run_scenario(load_scenario_text(textwrap.dedent(SCENARIO)), engine=engine)
    assert result.passed, result.failures
    responses = [e for e in result.events if e.kind == "model_response"]
    assert [e.data["response_id"] for e in responses] == ["resp-given"]
    # an unquoted timestamp stays the text written (YAML 1.2 core: no !!timestamp)
    assert [(e.data["model"], e.data["created_at"]) for e in responses] == [
        ("gpt-4o-mini", "2026-01-01T00:00:00Z")
    ]


@pytest.mark.parametrize(
    ("entry", "field", "match"),
    [
        ("continuation_token: tok", "continuation_token", 'expected a mapping, got "tok"'),
        ("additional_properties: [a]", "additional_properties", "expected a mapping"),
        ("finish_reason: ''", "finish_reason", "finish_reason: expected at least 1"),
        ("conversation_id: 7", "conversation_id", "expected text, got 7"),
        ("model: [gpt]", "model", "expected text, got"),
        ("model: ''", "model", "model: expected at least 1"),
        ("created_at: 1767225600", "created_at", "expected text, got 1767225600"),
        ("continuation_token: {a: .nan}", "continuation_token.a", "JSON has no NaN"),
    ],
)
def test_a_bad_scenario_field_is_a_located_error(entry: str, field: str, match: str) -> None:
    text = textwrap.dedent(
        f"""\
        version: 1
        agents:
          writer:
            script:
              - reply: hi
                {entry}
        parent: {{agent: writer}}
        steps: [{{run: hi}}]
        """
    )
    with pytest.raises(loopsim.ScenarioError, match=match) as info:
        load_scenario_text(text)
    assert info.value.line == 6
    assert info.value.location == f"agents.writer.script[0].{field}"


@pytest.mark.parametrize("entry", ["failure: down", "fault: rate_limit"])
def test_a_failure_or_fault_turn_takes_no_response_field(entry: str) -> None:
    text = textwrap.dedent(
        f"""\
        version: 1
        agents:
          writer:
            script:
              - {{{entry}, finish_reason: stop}}
        parent: {{agent: writer}}
        steps: [{{run: hi}}]
        """
    )
    with pytest.raises(loopsim.ScenarioError, match="finish_reason") as info:
        load_scenario_text(text)
    assert info.value.line == 5


# -- background responses: polled with the continuation token, on virtual time ---------------


def _poll(engine: str, agent: Any, *, streamed: bool, every: float) -> Any:
    async def main() -> tuple[str, int, float]:
        session = agent.create_session()
        start: dict[str, Any] = {"background": True}

        async def ask(messages: Any, options: dict[str, Any]) -> Any:
            if streamed:
                return await run_stream(engine, agent, messages, session=session, options=options)
            return await agent.run(messages, session=session, options=options)

        response = await ask("write the report", start)
        polls = 0
        while response.continuation_token is not None:
            assert response.text == ""  # nothing yet: still in progress
            await anyio.sleep(every)
            polls += 1
            response = await ask(None, {"continuation_token": response.continuation_token})
        return response.text, polls, anyio.current_time()

    return main


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_background_response_is_polled_on_virtual_time(engine: str, streamed: bool) -> None:
    model = ScriptedChatClient(["the report"])
    service = BackgroundResponseChatClient(model, duration=3600)
    agent = make_agent(engine, service)
    began = time.perf_counter()
    text, polls, elapsed = loopsim.simulate(_poll(engine, agent, streamed=streamed, every=600))
    assert time.perf_counter() - began < 10  # an hour of polling, in (much) less real time
    assert (text, polls, elapsed) == ("the report", 6, 3600.0)
    assert len(model.requests) == 1  # the model is asked once, when the work is done
    assert model.requests[0].text == "write the report"
    assert len(service.requests) == 7  # the start and six polls


def test_a_poll_before_the_end_returns_the_same_token_and_no_answer() -> None:
    service = BackgroundResponseChatClient(ScriptedChatClient(["done"]), duration=10)
    ask = [loopsim.Message.user("go")]

    async def main() -> list[Any]:
        started = await service.get_response(
            ask, options=loopsim.ChatOptions(additional_properties={"background": True})
        )
        poll = loopsim.ChatOptions(
            additional_properties={"continuation_token": started.continuation_token}
        )
        early = await service.get_response([], options=poll)
        await anyio.sleep(10)
        late = await service.get_response([], options=poll)
        again = await service.get_response([], options=poll)
        return [started, early, late, again]

    started, early, late, again = loopsim.simulate(main)
    assert started.continuation_token == {"response_id": started.response_id}
    assert early.continuation_token == started.continuation_token
    assert not early.messages
    assert late.text == "done"
    assert late.continuation_token is None
    assert late.response_id == started.response_id
    assert again == late  # the answer is kept: the model is not asked twice


def test_an_unknown_continuation_token_is_a_clear_error() -> None:
    service = BackgroundResponseChatClient(ScriptedChatClient([]), duration=1, name="svc")
    poll = loopsim.ChatOptions(additional_properties={"continuation_token": {"response_id": "x"}})

    async def main() -> Any:
        return await service.get_response([], options=poll)

    with pytest.raises(ValueError, match=r"svc: continuation_token .*'x'.* names no background"):
        loopsim.simulate(main)


@pytest.mark.parametrize(
    ("duration", "error"), [(-1, ValueError), (math.inf, ValueError), ("1", TypeError)]
)
def test_a_bad_duration_is_refused(duration: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="duration"):
        BackgroundResponseChatClient(ScriptedChatClient([]), duration=duration)


def test_a_plain_request_goes_straight_to_the_model() -> None:
    model = ScriptedChatClient(["direct"])
    for engine in ENGINES[:1]:
        agent = make_agent(engine, BackgroundResponseChatClient(model, duration=60))
        response = loopsim.simulate(agent.run, "hi")
        assert response.text == "direct"
        assert response.continuation_token is None
