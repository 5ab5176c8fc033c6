"""Streamed runs name their messages as agent_framework names them, on both engines.

Upstream names the agent (``author_name``) on every message of a finished run's response
that names nobody, in place, so the session history, which holds those same objects,
keeps them named. Two things differ in a streamed run:

* every streamed update carries the agent's name (``None`` for an unnamed agent);
* a harness agent persists each model call's messages as it goes (per-service-call
  history persistence); in a streamed run those are other objects than the response's,
  so the history keeps them unnamed, and the next run's requests show them unnamed.

Each test runs one program on loopsim's built-in engine and on agent-framework-core
(behind a minimal fake chat client that copies each request as it is sent) and asserts
the same facts of both: what the model is sent, what the session keeps, the names on the
updates and on the response.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import agent_framework as af
import pytest
from _af_fake import (
    FakeAFChatClient,
    af_call,
    approval_answer,
    run_agent,
    sent_messages,
    stored_messages,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import FunctionCallContent, Message, ScriptedChatClient

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

ENGINES = ("loopsim", "agent_framework")
#: upstream's harness options that turn off what loopsim's harness does not have
AF_HARNESS_OFF = {
    "disable_tool_auto_approval": True,
    "disable_todo": True,
    "disable_mode": True,
    "disable_file_memory": True,
    "disable_compaction": True,
    "disable_web_search": True,
}

Names = list[tuple[str, str | None]]


class SnapshotAFChatClient(FakeAFChatClient):
    """The fake client, keeping each request as it was when sent (upstream names the
    messages of a finished run in place, after the requests that carried them)."""

    def _next(self, messages: Sequence[af.Message], options: Mapping[str, Any]) -> af.ChatResponse:
        reply = super()._next(messages, options)
        self.requests[-1] = ([copy.deepcopy(m) for m in messages], dict(options))
        return reply


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@dataclass(frozen=True)
class Program:
    """Runs of one agent on one session; run i makes ``rounds[i]`` tool rounds, then answers."""

    harness: bool
    stream: bool
    name: str | None
    rounds: tuple[int, ...]


@dataclass
class Seen:
    """What one engine did: role and author of every message, per request, per run."""

    requests: list[Names]
    updates: list[Names]
    responses: list[Names]
    stored: Names


def names(messages: Any) -> Names:
    return [(str(m.role), m.author_name) for m in messages]


def runs_of(updates: Any) -> Names:
    """Role and author of the updates, a run of alike ones once (a text may come in chunks)."""
    out: Names = []
    for row in names(updates):
        if not out or out[-1] != row:
            out.append(row)
    return out


def _replies(engine: str, rounds: Sequence[int]) -> list[Any]:
    replies: list[Any] = []
    for run, count in enumerate(rounds):
        for i in range(count):
            call_id, arguments = f"c{run}-{i}", {"a": run, "b": i}
            if engine == "loopsim":
                call = FunctionCallContent(call_id=call_id, name="add", arguments=arguments)
                replies.append(Message("assistant", [call]))
            else:
                replies.append(af_call(call_id, "add", **arguments))
        replies.append(f"answer {run}")
    return replies


def _agent(engine: str, program: Program, client: Any) -> Any:
    if engine == "loopsim":
        if program.harness:
            return loopsim.create_harness_agent(client, name=program.name, tools=[add])
        return loopsim.Agent(client, name=program.name, tools=[add])
    if program.harness:
        return af.create_harness_agent(client, name=program.name, tools=[add], **AF_HARNESS_OFF)
    return af.Agent(client=client, name=program.name, tools=[add])


def run_program(engine: str, program: Program) -> Seen:
    replies = _replies(engine, program.rounds)
    client: Any = (
        ScriptedChatClient(replies) if engine == "loopsim" else SnapshotAFChatClient(replies)
    )
    agent = _agent(engine, program, client)
    updates: list[Names] = []
    responses: list[Names] = []

    async def main() -> Any:
        session = agent.create_session()
        for run in range(len(program.rounds)):
            if program.stream:
                stream = agent.run(f"ask {run}", session=session, stream=True)
                updates.append(runs_of([u async for u in stream]))
                response = await stream.get_final_response()
            else:
                response = await agent.run(f"ask {run}", session=session)
            responses.append(names(response.messages))
        return stored_messages(engine, session)

    stored = loopsim.simulate(main)
    sent = sent_messages(engine, client)
    return Seen([names(r) for r in sent], updates, responses, names(stored))


def both(program: Program) -> tuple[Seen, Seen]:
    return run_program("loopsim", program), run_program("agent_framework", program)


U, A, T = "user", "assistant", "tool"


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("harness", [False, True], ids=["agent", "harness"])
def test_the_next_run_is_sent_the_history_named_as_upstream_keeps_it(
    harness: bool, stream: bool
) -> None:
    ours, theirs = both(Program(harness, stream, "h", (1, 0)))
    assert ours.requests == theirs.requests
    assert ours.stored == theirs.stored
    # within a run, the tool loop's requests show the run's messages unnamed, always
    assert ours.requests[1] == [(U, None), (A, None), (T, None)]
    # the next run: named, except after a streamed harness run
    author = None if harness and stream else "h"
    assert ours.requests[2] == [(U, None), (A, author), (T, author), (A, author), (U, None)]
    assert ours.stored == [(U, None), (A, author), (T, author), (A, author), (U, None), (A, author)]


@pytest.mark.parametrize("harness", [False, True], ids=["agent", "harness"])
def test_streamed_updates_and_the_response_carry_the_agents_name(harness: bool) -> None:
    ours, theirs = both(Program(harness, True, "h", (1,)))
    # the call, the tool's result, the answer: each update named
    assert ours.updates == theirs.updates == [[(A, "h"), (T, "h"), (A, "h")]]
    assert ours.responses == theirs.responses == [[(A, "h"), (T, "h"), (A, "h")]]


def test_an_unnamed_harness_streams_unnamed_updates_and_keeps_its_history_unnamed() -> None:
    ours, theirs = both(Program(True, True, None, (1, 0)))
    assert ours.updates == theirs.updates
    assert ours.updates[0] == [(A, None), (T, None), (A, None)]
    unnamed = "UnnamedAgent"  # upstream's name for the response of an agent without one
    assert ours.responses == theirs.responses
    assert ours.responses[0] == [(A, unnamed), (T, unnamed), (A, unnamed)]
    assert ours.stored == theirs.stored
    assert [author for _, author in ours.stored] == [None] * 6


@settings(deadline=None, max_examples=12)
@given(
    harness=st.booleans(),
    stream=st.booleans(),
    name=st.sampled_from(["h", None]),
    rounds=st.lists(st.integers(0, 2), min_size=1, max_size=3).map(tuple),
)
def test_any_program_is_named_alike_on_both_engines(
    harness: bool, stream: bool, name: str | None, rounds: tuple[int, ...]
) -> None:
    ours, theirs = both(Program(harness, stream, name, rounds))
    assert ours == theirs
    assert len(ours.requests) == sum(rounds) + len(rounds)


# -- a harness agent's approvals -------------------------------------------------------------

Kinds = list[tuple[str, str | None, list[str]]]


def kinds(messages: Any) -> Kinds:
    """Role, author and content types of every message."""
    return [(str(m.role), m.author_name, [str(c.type) for c in m.contents]) for m in messages]


def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _approval_harness(engine: str, second: str, *, stream: bool) -> tuple[list[Kinds], Kinds]:
    """A harness agent: rm (asks approval) -> ``second`` ("yes", "no" or a text) -> "next".

    Returns every model request as sent, and the session's stored history.
    """
    replies: list[Any] = ["done", "again"]
    if engine == "loopsim":
        call = FunctionCallContent(call_id="c1", name="delete", arguments={"path": "/x"})
        client: Any = ScriptedChatClient([Message("assistant", [call]), *replies])
        gated: Any = loopsim.tool(delete, approval_mode="always_require")
        agent: Any = loopsim.create_harness_agent(client, name="h", tools=[gated])
    else:
        client = SnapshotAFChatClient([af_call("c1", "delete", path="/x"), *replies])
        gated = af.tool(delete, approval_mode="always_require")
        agent = af.create_harness_agent(client, name="h", tools=[gated], **AF_HARNESS_OFF)

    async def run(message: Any, session: Any) -> Any:
        return await run_agent(agent, message, session, stream=stream)

    async def main() -> Any:
        session = agent.create_session()
        first = await run("rm", session)
        request = first.messages[0].contents[1]
        assert request.type == "function_approval_request"
        message: Any = second
        if second in ("yes", "no"):
            message = approval_answer(engine, request, second == "yes")
        await run(message, session)
        await run("next", session)
        return stored_messages(engine, session)

    stored = loopsim.simulate(main)
    sent = sent_messages(engine, client)
    return [kinds(r) for r in sent], kinds(stored)


CALL, ASK = "function_call", "function_approval_request"
RESULT, TEXT = "function_result", "text"


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("answer", ["yes", "no"])
def test_a_harness_keeps_an_answered_approval_as_its_model_calls_saw_it(
    answer: str, stream: bool
) -> None:
    ours, ours_stored = _approval_harness("loopsim", answer, stream=stream)
    theirs, theirs_stored = _approval_harness("agent_framework", answer, stream=stream)
    assert ours == theirs
    assert ours_stored == theirs_stored
    named = None if stream else "h"
    # the answering run: the history as loaded (a plain run hides the request; a harness
    # loads it beneath the tool loop, so a non-streamed run shows it), then the result
    asked = [CALL] if stream else [CALL, ASK]
    assert ours[1] == [(U, None, [TEXT]), (A, named, asked), (T, None, [RESULT])]
    # the session keeps the result in place of the host's answer, never named; a streamed
    # run never kept the request beside the call
    assert ours_stored == [
        (U, None, [TEXT]),
        (A, named, asked),
        (T, None, [RESULT]),
        (A, named, [TEXT]),
        (U, None, [TEXT]),
        (A, named, [TEXT]),
    ]
    # the next run: the request, settled by its result, is left out
    assert ours[2][1] == (A, named, [CALL])


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_a_harness_shows_an_approval_left_unanswered_as_loaded(stream: bool) -> None:
    ours, ours_stored = _approval_harness("loopsim", "never mind", stream=stream)
    theirs, theirs_stored = _approval_harness("agent_framework", "never mind", stream=stream)
    assert ours == theirs
    assert ours_stored == theirs_stored
    # a plain agent hides the open request with its call; a harness's tool loop sees the
    # input only, so the history reaches the model as loaded
    asked = (A, None, [CALL]) if stream else (A, "h", [CALL, ASK])
    assert ours[1] == [(U, None, [TEXT]), asked, (U, None, [TEXT])]
    assert ours[2][1] == asked


def _two_asks(engine: str, *, stream: bool) -> tuple[Kinds, list[list[str]], Kinds]:
    """One answer asking for two gated calls: the response, the updates' content types
    (streamed), and the stored history."""
    if engine == "loopsim":
        calls = [
            FunctionCallContent(call_id=f"c{i}", name="delete", arguments={"path": f"/{i}"})
            for i in range(2)
        ]
        client: Any = ScriptedChatClient([Message("assistant", calls)])
        gated: Any = loopsim.tool(delete, approval_mode="always_require")
        agent: Any = loopsim.Agent(client, name="h", tools=[gated])
    else:
        contents = [
            af.Content.from_function_call(
                call_id=f"c{i}", name="delete", arguments={"path": f"/{i}"}
            )
            for i in range(2)
        ]
        client = SnapshotAFChatClient([af.Message(role="assistant", contents=contents)])
        gated = af.tool(delete, approval_mode="always_require")
        agent = af.Agent(client=client, name="h", tools=[gated])
    updates: list[list[str]] = []

    async def main() -> Any:
        session = agent.create_session()
        if stream:
            response = agent.run("rm both", session=session, stream=True)
            updates.extend([[str(c.type) for c in u.contents] async for u in response])
            final = await response.get_final_response()
        else:
            final = await agent.run("rm both", session=session)
        return kinds(final.messages), stored_messages(engine, session)

    response, stored = loopsim.simulate(main)
    return response, updates, kinds(stored)


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_approval_requests_follow_all_the_calls_of_the_answer(stream: bool) -> None:
    ours, ours_updates, ours_stored = _two_asks("loopsim", stream=stream)
    theirs, theirs_updates, theirs_stored = _two_asks("agent_framework", stream=stream)
    both_asked = [(A, "h", [CALL, CALL, ASK, ASK])]
    assert ours == theirs == both_asked
    assert ours_stored == theirs_stored == [(U, None, [TEXT]), *both_asked]
    if stream:
        # the calls as the model streamed them (loopsim's scripted model: one per update),
        # then the requests as one update of their own
        assert [t for u in ours_updates for t in u] == [t for u in theirs_updates for t in u]
        assert ours_updates[-1] == theirs_updates[-1] == [ASK, ASK]


def boom(x: int) -> int:
    """Fail, always."""
    msg = f"no {x}"
    raise RuntimeError(msg)


def _past_the_error_limit(engine: str, *, harness: bool, stream: bool) -> tuple[Kinds, Kinds]:
    """Three failing tool rounds, a fourth call past the limit (dropped: the fallback text
    answers), then a second run. Returns the second run's request and the stored history."""
    if engine == "loopsim":
        replies: list[Any] = [
            Message(
                "assistant", [FunctionCallContent(call_id=f"c{i}", name="boom", arguments={"x": i})]
            )
            for i in range(4)
        ]
        client: Any = ScriptedChatClient([*replies, "again"])
        agent: Any = (
            loopsim.create_harness_agent(client, name="h", tools=[boom])
            if harness
            else loopsim.Agent(client, name="h", tools=[boom])
        )
    else:
        client = SnapshotAFChatClient([*(af_call(f"c{i}", "boom", x=i) for i in range(4)), "again"])
        agent = (
            af.create_harness_agent(client, name="h", tools=[boom], **AF_HARNESS_OFF)
            if harness
            else af.Agent(client=client, name="h", tools=[boom])
        )

    async def main() -> Any:
        session = agent.create_session()
        for text in ("go", "next"):
            if stream:
                response = agent.run(text, session=session, stream=True)
                async for _ in response:
                    pass
                await response.get_final_response()
            else:
                await agent.run(text, session=session)
        return stored_messages(engine, session)

    stored = loopsim.simulate(main)
    last = client.requests[-1].messages if engine == "loopsim" else client.requests[-1][0]
    return kinds(last), kinds(stored)


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("harness", [False, True], ids=["agent", "harness"])
def test_the_fallback_text_past_the_error_limit_is_kept_as_upstream_keeps_it(
    harness: bool, stream: bool
) -> None:
    ours, ours_stored = _past_the_error_limit("loopsim", harness=harness, stream=stream)
    theirs, theirs_stored = _past_the_error_limit("agent_framework", harness=harness, stream=stream)
    assert ours == theirs
    assert ours_stored == theirs_stored
    # a streamed harness persisted each model call itself: the fallback text, which no
    # model call made, is not in its history
    texts = [kinds for role, _, kinds in ours_stored if role == A and kinds == [TEXT]]
    assert len(texts) == (1 if harness and stream else 2)


# -- answering part of a batch of approvals --------------------------------------------------


def _part_of_a_batch(
    engine: str, first: bool, *, harness: bool, stream: bool
) -> tuple[list[Kinds], list[Kinds], Kinds, list[str]]:
    """Two gated calls in one answer; the host answers the first (``first``), then the
    second (yes), then says "next". Returns every request as sent, each run's response,
    the stored history and the order the tool ran in."""
    ran: list[str] = []

    def remove(path: str) -> str:
        """Remove a file."""
        ran.append(path)
        return f"removed {path}"

    paths = [{"path": f"/{i}"} for i in range(2)]
    replies: list[Any] = ["done", "again"]
    if engine == "loopsim":
        calls = [
            FunctionCallContent(call_id=f"c{i}", name="remove", arguments=a)
            for i, a in enumerate(paths)
        ]
        client: Any = ScriptedChatClient([Message("assistant", calls), *replies])
        gated: Any = loopsim.tool(remove, approval_mode="always_require")
        agent: Any = (
            loopsim.create_harness_agent(client, name="h", tools=[gated])
            if harness
            else loopsim.Agent(client, name="h", tools=[gated])
        )
    else:
        contents = [
            af.Content.from_function_call(call_id=f"c{i}", name="remove", arguments=a)
            for i, a in enumerate(paths)
        ]
        client = SnapshotAFChatClient([af.Message(role="assistant", contents=contents), *replies])
        gated = af.tool(remove, approval_mode="always_require")
        agent = (
            af.create_harness_agent(client, name="h", tools=[gated], **AF_HARNESS_OFF)
            if harness
            else af.Agent(client=client, name="h", tools=[gated])
        )
    responses: list[Kinds] = []

    async def run(message: Any, session: Any) -> Any:
        if stream:
            response = agent.run(message, session=session, stream=True)
            async for _ in response:
                pass
            final = await response.get_final_response()
        else:
            final = await agent.run(message, session=session)
        responses.append(kinds(final.messages))
        return final

    async def main() -> Any:
        session = agent.create_session()
        asked = await run("rm both", session)
        requests = [c for c in asked.messages[0].contents if c.type == ASK]
        assert len(requests) == 2
        await run(approval_answer(engine, requests[0], first), session)
        ran.append("--")  # nothing may run before the batch is answered
        await run(approval_answer(engine, requests[1], True), session)
        await run("next", session)
        return stored_messages(engine, session)

    stored = loopsim.simulate(main)
    sent = sent_messages(engine, client)
    return [kinds(r) for r in sent], responses, kinds(stored), ran


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("harness", [False, True], ids=["agent", "harness"])
@pytest.mark.parametrize("first", [True, False], ids=["yes", "no"])
def test_answering_part_of_a_batch_runs_nothing_until_the_last_answer(
    first: bool, harness: bool, stream: bool
) -> None:
    ours = _part_of_a_batch("loopsim", first, harness=harness, stream=stream)
    theirs = _part_of_a_batch("agent_framework", first, harness=harness, stream=stream)
    assert ours == theirs
    requests, responses, _, ran = ours
    assert len(requests) == 3  # no model call for the partial answer
    assert responses[1] == [(A, "h", [ASK])]  # the request still open, shown again
    assert ran == ["--", "/0", "/1"] if first else ["--", "/1"]
    # the model sees both results together, in call order
    assert requests[1][-1] == (T, None, [RESULT, RESULT])
