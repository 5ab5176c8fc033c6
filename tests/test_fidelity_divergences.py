"""The last divergences of the shipped scenarios, each pinned on both engines.

* an answered approval: what the model is shown afterwards (the call, then its result);
* ``release_session``: the records it leaves, and when they become ``lost``;
* children finishing at one virtual instant: which one the wait tool reports.

Each test runs one program on loopsim's built-in engine and on agent-framework-core
(behind a minimal fake chat client) and asserts the same facts of both.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af
import anyio
import pytest
from _af_fake import FakeAFChatClient, af_call, approval_answer, sent_messages, stored_messages
from _shapes import results, shape

import loopsim
from loopsim import FunctionCallContent, Message, ScriptedChatClient
from loopsim._scenario import load_scenario_text, run_scenario
from loopsim._wording import WORDING, agrees
from loopsim.agent_framework import as_chat_client, instrument

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _ls_call() -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id="c1", name="delete", arguments={"path": "/x"})]
    )


def _approval_program(engine: str, second: str, *, stream: bool = False) -> tuple[list[Any], Any]:
    """rm (asks approval) -> ``second`` ("yes", "no" or a text) -> "next".

    Returns the messages of every model request, and the session's stored history.
    """
    replies: list[Any] = ["done", "again"]
    if engine == "loopsim":
        client: Any = ScriptedChatClient([_ls_call(), *replies])
        agent: Any = loopsim.Agent(
            client, name="ops", tools=[loopsim.tool(delete, approval_mode="always_require")]
        )
    else:
        client = FakeAFChatClient([af_call("c1", "delete", path="/x"), *replies])
        agent = af.Agent(
            client=client, name="ops", tools=[af.tool(delete, approval_mode="always_require")]
        )

    async def run(message: Any, session: Any) -> Any:
        if not stream:
            return await agent.run(message, session=session)
        if engine == "loopsim":
            return await agent.run_stream(message, session=session).get_final_response()
        return await agent.run(message, session=session, stream=True).get_final_response()

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
    return sent, stored


ENGINES = ["loopsim", "agent_framework"]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("answer", ["yes", "no"])
def test_after_an_answered_approval_the_model_sees_the_call_then_its_result(
    answer: str, stream: bool
) -> None:
    ours, ours_stored = _approval_program("loopsim", answer, stream=stream)
    theirs, theirs_stored = _approval_program("agent_framework", answer, stream=stream)
    call = ("assistant", [("function_call", "c1")])
    # the run that answers: the request beside the call and the host's answer are gone,
    # the answer's message became the tool message with the result
    expected_answering = [("user", [("text", "rm")]), call, ("tool", [("function_result", "c1")])]
    assert shape(ours[1]) == shape(theirs[1]) == expected_answering
    # the next run: the history as loaded, settled approvals left out
    expected_next = [
        *expected_answering,
        ("assistant", [("text", "done")]),
        ("user", [("text", "next")]),
    ]
    assert shape(ours[2]) == shape(theirs[2]) == expected_next
    assert [m.author_name for m in ours[2]] == [m.author_name for m in theirs[2]]
    assert [m.author_name for m in ours[1]] == [m.author_name for m in theirs[1]]
    ours_result, theirs_result = results(ours[1])[0], results(theirs[1])[0]
    if answer == "yes":
        assert ours_result == theirs_result == "deleted /x"
    else:
        assert ours_result == WORDING["agent.tool.rejected"]
        assert agrees(ours_result, theirs_result)
    # the session keeps everything as it happened: the request, the answer, the result
    stored_shape = [
        ("user", [("text", "rm")]),
        ("assistant", [("function_call", "c1"), ("function_approval_request", None)]),
        ("user", [("function_approval_response", None)]),
        ("tool", [("function_result", "c1")]),
        ("assistant", [("text", "done")]),
        ("user", [("text", "next")]),
        ("assistant", [("text", "again")]),
    ]
    assert shape(ours_stored) == shape(theirs_stored) == stored_shape


def test_an_approval_left_unanswered_is_hidden_from_the_model_with_its_call() -> None:
    ours, ours_stored = _approval_program("loopsim", "never mind")
    theirs, theirs_stored = _approval_program("agent_framework", "never mind")
    expected = [("user", [("text", "rm")]), ("user", [("text", "never mind")])]
    assert shape(ours[1]) == shape(theirs[1]) == expected
    assert shape(ours[2]) == shape(theirs[2])
    assert shape(ours[2])[:2] == expected
    # still kept in the session, still open
    assert shape(ours_stored) == shape(theirs_stored)
    assert shape(ours_stored)[1] == (
        "assistant",
        [("function_call", "c1"), ("function_approval_request", None)],
    )


# -- release_session -------------------------------------------------------------------------

START = {"agent_name": "slow", "input": "x", "description": "job"}


def _release_program(engine: str) -> Any:
    """Start a slow task (not waited on), release at t=5, run the parent again at t=6."""
    start = Message(
        "assistant",
        [FunctionCallContent(call_id="p1", name="background_agents_start_task", arguments=START)],
    )
    child_model = ScriptedChatClient([loopsim.Turn("late", delay=100)], name="slow-model")
    parent_model = ScriptedChatClient([start, "started", "again"], name="boss-model")
    if engine == "loopsim":
        child: Any = loopsim.Agent(child_model, name="slow")
        provider: Any = loopsim.BackgroundAgentsProvider([child])
        parent: Any = loopsim.Agent(parent_model, name="boss", context_providers=[provider])
    else:
        child = af.Agent(client=as_chat_client(child_model), name="slow")
        provider = af.BackgroundAgentsProvider([child])
        parent = instrument(
            af.Agent(client=as_chat_client(parent_model), name="boss", context_providers=[provider])
        )

    def statuses(session: Any) -> list[str]:
        return [r["status"] for r in session.state["background_agents"]["tasks"]]

    async def main() -> dict[str, Any]:
        session = parent.create_session()
        await parent.run("go", session=session)
        seen = {"started": statuses(session)}
        await anyio.sleep(5)
        await provider.release_session(session)
        seen["released"] = statuses(session)
        await anyio.sleep(1)
        await parent.run("again", session=session)  # its context provider refreshes
        seen["refreshed"] = statuses(session)
        seen["child_calls"] = len(child_model.requests)
        return seen

    return loopsim.record(main)


def test_release_session_leaves_the_record_running_until_the_next_refresh() -> None:
    facts = {}
    for engine in ENGINES:
        seen, transcript = _release_program(engine)
        traced = [
            (e.time, e.data["task_id"], e.data["status"])
            for e in transcript.events
            if e.kind == "task_status"
        ]
        facts[engine] = (seen, traced)
    assert facts["loopsim"] == facts["agent_framework"]
    seen, traced = facts["loopsim"]
    assert seen == {
        "started": ["running"],
        "released": ["running"],  # release touches no record
        "refreshed": ["lost"],  # the fresh runtime has no handle for it
        "child_calls": 1,
    }
    # nothing traced at the release (t=5): the change is seen at the refresh (t=6)
    assert traced == [(0.0, 1, "running"), (6.0, 1, "lost")]


RELEASE_SCENARIO = """\
version: 1
agents:
  boss: {policy: {coordinator: {detach: true}}}
  worker: {policy: {echo: {delay: 500}}}
parent: {agent: boss, background_agents: [worker]}
steps:
  - run: start
  - advance: 5
  - release_session
expect:
  tasks: {1: lost}
"""


def test_a_scenario_ending_after_a_release_traces_the_same_statuses_on_both_engines() -> None:
    traced = {}
    for engine in ENGINES:
        result = run_scenario(load_scenario_text(RELEASE_SCENARIO), engine=engine)
        assert result.passed, result.report()
        assert result.transcript is not None
        traced[engine] = [
            (e.time, e.data["task_id"], e.data["status"])
            for e in result.transcript.events
            if e.kind == "task_status"
        ]
    # the end-of-run read refreshes the records: the record becomes lost then, traced so
    assert traced["loopsim"] == traced["agent_framework"] == [(0.0, 1, "running"), (5.0, 1, "lost")]


# -- same-instant completions ----------------------------------------------------------------

TIE_SCENARIO = """\
version: 1
seed: {seed}
agents:
  boss: {{policy: coordinator}}
  a: {{policy: {{echo: {{delay: 7}}}}}}
  b: {{policy: {{echo: {{delay: 7}}}}}}
  c: {{policy: {{echo: {{delay: 7}}}}}}
parent: {{agent: boss, background_agents: [a, b, c]}}
steps:
  - run: go
"""


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_of_tasks_finishing_together_the_wait_reports_the_first_requested(seed: int) -> None:
    seen = {}
    for engine in ENGINES:
        result = run_scenario(load_scenario_text(TIE_SCENARIO.format(seed=seed)), engine=engine)
        assert result.passed, result.report()
        waits = [
            e.data["result"]
            for e in result.events
            if e.kind == "tool_result" and e.data["name"].endswith("wait_for_first_completion")
        ]
        completed = [
            e.data["task_id"]
            for e in result.events
            if e.kind == "task_status" and e.data["status"] == "completed"
        ]
        seen[engine] = (len(waits), completed)
    assert seen["loopsim"] == seen["agent_framework"] == (3, [1, 2, 3])


class AFChild(af.BaseAgent):
    def run(self, messages: Any = None, *, stream: bool = False, **_: Any) -> Any:
        async def go() -> af.AgentResponse:
            await anyio.sleep(10)
            return af.AgentResponse(messages=[af.Message(role="assistant", contents=["done"])])

        return go()


class LSChild(loopsim.BaseAgent):
    async def _run(self, messages: list[Message], session: Any, options: Any) -> Any:
        await anyio.sleep(10)
        return loopsim.AgentResponse(Message.assistant("done"))


def _wait_reply(engine: str, order: list[int]) -> str:
    """Start a, b, c (all end at t=10) through the provider's tools; wait for ``order``."""
    if engine == "loopsim":
        provider: Any = loopsim.BackgroundAgentsProvider([LSChild(name=n) for n in "abc"])
        session: Any = loopsim.AgentSession()
        context: Any = loopsim.SessionContext(input_messages=[])
    else:
        provider = af.BackgroundAgentsProvider([AFChild(name=n) for n in "abc"])
        session = af.AgentSession()
        context = af.SessionContext(input_messages=[])

    async def main() -> str:
        await provider.before_run(agent=None, session=session, context=context, state={})
        tools = {t.name: t for t in context.tools}
        for name in "abc":
            await tools["background_agents_start_task"].invoke(
                arguments={"agent_name": name, "input": "x", "description": name}
            )
        reply = await tools["background_agents_wait_for_first_completion"].invoke(
            arguments={"task_ids": order}
        )
        await provider.release_session(session)
        return str(reply if isinstance(reply, str) else reply[0].text)

    return loopsim.simulate(main)


@pytest.mark.parametrize("order", [[3, 1, 2], [2, 3, 1]])
def test_the_wait_tool_reports_the_first_requested_of_the_finished_tasks(order: list[int]) -> None:
    ours, theirs = _wait_reply("loopsim", order), _wait_reply("agent_framework", order)
    assert ours == WORDING["background.wait.finished"].format(task_id=order[0], status="completed")
    assert agrees(ours, theirs)
    assert f"Task {order[0]} " in theirs
