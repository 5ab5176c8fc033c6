"""A real agent_framework program with hosted tools (tests/af_programs/hosted_search.py),
unchanged but for the model: run three times, byte-identical transcripts, and what it did.

The program builds its own harness agent (which adds the vendor's hosted web search by
itself) and a file search; the model is a loopsim script behind ``as_chat_client``, the
one thing swapped. The script says what each hosted search found.
"""

from __future__ import annotations

from typing import Any

import pytest
from af_programs import hosted_search

import loopsim
from loopsim.agent_framework import as_chat_client

ANSWER = "High tide in Lisbon is at 06:10 local time (tides.example, harbour tables p.4)."


def model() -> loopsim.ScriptedChatClient:
    searched = loopsim.Message(
        "assistant",
        [
            *loopsim.hosted_call(
                "web_search",
                {"query": "Lisbon high tide today"},
                result={"sources": ["https://tides.example/lisbon"]},
                call_id="ws_1",
            ),
            *loopsim.hosted_call(
                "file_search",
                {"queries": ["Lisbon spring tides"]},
                result={"sources": ["harbour.pdf#p4"]},
                call_id="fs_1",
            ),
            loopsim.FunctionCallContent(
                call_id="call_1", name="local_time", arguments={"utc": "05:10", "port": "Lisbon"}
            ),
        ],
    )
    return loopsim.ScriptedChatClient(
        [loopsim.Turn(searched, delay=2), loopsim.Turn(ANSWER, delay=1)], name="tide-model"
    )


def run_once(seed: int = 0) -> tuple[Any, loopsim.Transcript, loopsim.ScriptedChatClient]:
    scripted = model()

    async def app() -> Any:
        return await hosted_search.main(as_chat_client(scripted))

    answer, transcript = loopsim.record(app, seed=seed, scenario="hosted_search")
    return answer, transcript, scripted


def test_the_hosted_search_program_runs_three_times_byte_identical() -> None:
    runs = [run_once() for _ in range(3)]
    first = runs[0][1].to_json()
    assert all(transcript.to_json() == first for _, transcript, _ in runs[1:])
    # not vacuously equal: each holds the whole run, hosted searches included
    kinds = [e.kind for e in runs[0][1].events]
    assert kinds.count("hosted_tool") == 2
    assert kinds.count("tool_result") == 1

    answer, transcript, scripted = runs[0]
    assert answer.text == ANSWER
    assert answer.searches == ["web_search", "file_search"]
    assert answer.sources == ["https://tides.example/lisbon", "harbour.pdf#p4"]
    assert scripted.remaining == ()
    # the harness's own web search is offered, as in production, with the app's tools
    tools = scripted.requests[0].options.tool_names
    assert tools[:3] == ["web_search", "local_time", "file_search"]
    # the app's tool ran on what the model found; the searches were the service's
    (result,) = [e for e in transcript.events if e.kind == "tool_result"]
    assert (result.data["name"], result.data["result"]) == ("local_time", "06:10")
    hosted = [
        (e.data["name"], e.data["call_id"], e.time)
        for e in transcript.events
        if e.kind == "hosted_tool"
    ]
    assert hosted == [("web_search", "ws_1", 2.0), ("file_search", "fs_1", 2.0)]
    assert transcript.events[-1].time == 3.0


def test_a_search_the_script_never_answers_stops_the_program_naming_it() -> None:
    scripted = loopsim.ScriptedChatClient(
        [loopsim.Message("assistant", [loopsim.hosted_call("web_search", result=None)[0], "?"])]
    )

    async def app() -> Any:
        return await hosted_search.main(as_chat_client(scripted))

    with pytest.raises(loopsim.HostedToolError) as info:
        loopsim.record(app)
    error = info.value
    assert (error.tool, error.agent, error.turn) == ("web_search", "tide_desk", 1)
