"""Properties of the background tools over generated interleavings.

Any sequence of start / wait / results / list / continue / clear / time passing /
release / restart (serialize the parent session, restore it into a new provider), with
children that succeed or fail after random virtual delays, keeps:

* ids unique, in id order, below ``next_task_id``, never reused (not even after clear);
* every record consistent: completed ⇔ has a result and no error, failed ⇔ an error and
  no result, running/lost ⇔ neither;
* every finished result that was once saved: it stays exactly as saved until the task is
  cleared or continued — across releases and restarts;
* a restart turns exactly the saved ``running`` records into ``lost``;
* ``provider.tasks(session)`` agrees with the saved records; no tool call raises.

Runs that end are saved only when something refreshes (as upstream), so a generated
restart or release often catches a run that finished but was never collected: it must
come back ``lost``, never with a result the session did not record.
"""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim import AgentResponse, AgentSession, BackgroundAgentsProvider, Message, SessionContext

AGENTS = ("alpha", "beta")
TERMINAL = {"completed", "failed"}


class Worker(loopsim.BaseAgent):
    """Input ``"ok 12 r7"`` answers ``r7`` after 12 virtual seconds; ``"fail 3 r2"`` raises."""

    async def _run(
        self, messages: list[Message], session: AgentSession, options: Any
    ) -> AgentResponse:
        outcome, delay, tag = messages[-1].text.split()
        await anyio.sleep(float(delay))
        if outcome == "fail":
            raise RuntimeError(f"failed {tag}")
        return AgentResponse(Message.assistant(tag))


def work() -> st.SearchStrategy[str]:
    return st.builds(
        "{} {} r{}".format,
        st.sampled_from(["ok", "ok", "fail"]),
        st.sampled_from([0, 0, 5, 20, 40]),
        st.integers(0, 999),
    )


# Small ids and weighted kinds, so that generated sequences often hit existing tasks.
task_ids = st.integers(1, 3)
OPERATIONS: dict[str, st.SearchStrategy[tuple[Any, ...]]] = {
    "start": st.tuples(st.just("start"), st.sampled_from([*AGENTS, "ALPHA", "nobody"]), work()),
    "wait": st.tuples(st.just("wait"), st.lists(task_ids, max_size=3)),
    "advance": st.tuples(st.just("advance"), st.sampled_from([0, 1, 10, 30])),
    "continue": st.tuples(st.just("continue"), task_ids, work()),
    "clear": st.tuples(st.just("clear"), task_ids),
    "results": st.tuples(st.just("results"), task_ids),
    "all": st.just(("all",)),
    "rerun": st.just(("rerun",)),
    "release": st.just(("release",)),
    "restart": st.just(("restart",)),
    "inspect": st.just(("inspect",)),
}
WEIGHTS = {"start": 4, "wait": 2, "advance": 3, "continue": 3, "clear": 3, "results": 2}
kinds = st.sampled_from([k for k in OPERATIONS for _ in range(WEIGHTS.get(k, 1))])
operations = st.lists(kinds.flatmap(OPERATIONS.__getitem__), min_size=3, max_size=40)


def new_provider() -> BackgroundAgentsProvider:
    return BackgroundAgentsProvider([Worker(name=n) for n in AGENTS], wait_timeout_seconds=15)


async def open_tools(provider: BackgroundAgentsProvider, session: AgentSession) -> dict[str, Any]:
    context = SessionContext(input_messages=[])
    await provider.before_run(
        agent=None,
        session=session,
        context=context,
        state=session.state.setdefault(provider.source_id, {}),
    )
    return {tool.name: tool for tool in context.tools}


def saved(session: AgentSession) -> list[dict[str, Any]]:
    return [dict(r) for r in session.state["background_agents"]["tasks"]]


def check_records(session: AgentSession, issued: set[int]) -> None:
    state = session.state["background_agents"]
    ids = [r["id"] for r in state["tasks"]]
    assert ids == sorted(set(ids)), f"ids not unique or out of order: {ids}"
    assert all(i < state["next_task_id"] for i in ids)
    assert set(ids) <= issued
    for record in state["tasks"]:
        status = record["status"]
        assert status in {"running", "completed", "failed", "lost"}
        assert ("result_text" in record) == (status == "completed"), record
        assert ("error_text" in record) == (status == "failed"), record


async def scenario(ops: list[tuple[Any, ...]]) -> None:
    provider = new_provider()
    session = AgentSession()
    tools = await open_tools(provider, session)
    issued: set[int] = set()
    finished: dict[int, dict[str, Any]] = {}  # id -> the terminal record as once saved

    for op in ops:
        kind = op[0]
        before = {r["id"]: r for r in saved(session)}
        touched: int | None = None  # a task the op may legitimately change
        if kind == "start":
            reply = await tools["background_agents_start_task"].invoke(
                {"agent_name": op[1], "input": op[2], "description": op[2]}
            )
            if op[1] == "nobody":
                assert reply.startswith("Error: there is no background agent named")
            elif reply.startswith("Started background task "):
                new_id = int(reply.split()[3])
                assert new_id not in issued, f"id {new_id} reused"
                issued.add(new_id)
            else:
                assert "being released" in reply
        elif kind == "wait":
            reply = await tools["background_agents_wait_for_first_completion"].invoke(
                {"task_ids": op[1]}
            )
            assert isinstance(reply, str)
        elif kind == "results":
            reply = await tools["background_agents_get_task_results"].invoke({"task_id": op[1]})
            record = {r["id"]: r for r in saved(session)}.get(op[1])
            if record is not None and record["status"] == "completed":
                assert reply == (record["result_text"] or "(the task produced no text)")
        elif kind == "all":
            await tools["background_agents_get_all_tasks"].invoke({})
        elif kind == "continue":
            reply = await tools["background_agents_continue_task"].invoke(
                {"task_id": op[1], "text": op[2]}
            )
            if reply == f"Task {op[1]} is running again with the new input.":
                touched = op[1]
        elif kind == "clear":
            reply = await tools["background_agents_clear_completed_task"].invoke({"task_id": op[1]})
            if reply == f"Removed task {op[1]}.":
                touched = op[1]
        elif kind == "advance":
            await anyio.sleep(op[1])
        elif kind == "rerun":
            tools = await open_tools(provider, session)
        elif kind == "release":
            await provider.release_session(session)
            tools = await open_tools(provider, session)
            after = {r["id"]: r for r in saved(session)}
            for task_id, record in before.items():
                expected = "lost" if record["status"] == "running" else record["status"]
                # a running task may have been finalized first by a waiter: not here
                assert after[task_id]["status"] == expected, (record, after[task_id])
        elif kind == "inspect":  # the host's view (refreshes, like a tool would)
            infos = provider.tasks(session)
            assert [i.to_dict() for i in infos] == saved(session)
        elif kind == "restart":
            snapshot = session.to_dict()
            provider = new_provider()
            session = AgentSession.from_dict(snapshot)
            tools = await open_tools(provider, session)
            after = {r["id"]: r for r in saved(session)}
            assert set(after) == set(before)
            for task_id, record in before.items():
                if record["status"] == "running":
                    assert after[task_id]["status"] == "lost"
                else:
                    assert after[task_id] == record

        check_records(session, issued)
        current = {r["id"]: r for r in saved(session)}
        for task_id, record in list(finished.items()):
            if task_id == touched:
                del finished[task_id]
                continue
            assert current.get(task_id) == record, f"finished task {task_id} changed: {record}"
        for task_id, record in current.items():
            if record["status"] in TERMINAL and task_id not in finished:
                finished[task_id] = record


@given(ops=operations, backend=st.sampled_from(["asyncio", "trio"]))
def test_any_interleaving_keeps_tasks_consistent(ops: list[tuple[Any, ...]], backend: str) -> None:
    loopsim.simulate(scenario, ops, backend=backend)
