"""Requests that resend a growing history are held sharing it (issue 21, item 11).

A recorded request keeps every message sent, and a long loop resends its whole history
each time: held as one list per request, n iterations would hold O(n^2) slots. The
recorder and the agent_framework adapter's request log share one list per agent and
session instead, and what is read back is what a plain copy per request would hold.
"""

from __future__ import annotations

import gc
import types
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import Message

# -- reading back: the shared form equals a plain copy per request --------------------

#: One step of a session's history before it is sent: ("extend", k) appends k new
#: messages, ("truncate", j) keeps the first j, ("replace", j) puts a new message at j,
#: ("edit", j) changes message j in place (after it was sent), ("diverge", seed) sends
#: a reordered history.
_STEPS = st.one_of(
    st.tuples(st.just("extend"), st.integers(0, 3)),
    st.tuples(st.just("truncate"), st.integers(0, 8)),
    st.tuples(st.just("replace"), st.integers(0, 8)),
    st.tuples(st.just("edit"), st.integers(0, 8)),
    st.tuples(st.just("diverge"), st.integers(0, 8)),
)
#: Each request: the agent sending, the steps made to its history since its last
#: request, and whether it goes as a tuple (rather than a list).
_REQUESTS = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.lists(_STEPS, max_size=3), st.booleans()),
    min_size=1,
    max_size=40,
)


def _plain(pool_dumps: dict[int, dict[str, Any]], message: Message) -> dict[str, Any]:
    # A message is written as it was when the run first sent it (the recorder dumps
    # each message once; an edit made afterwards changes no recorded event).
    dumped = pool_dumps.get(id(message))
    if dumped is None:
        dumped = pool_dumps[id(message)] = message.model_dump(mode="json")
    return dumped


@settings(max_examples=200, deadline=None)
@given(_REQUESTS)
# a shorter request that is not a prefix of what was sent (an edit, then a cut)
@example([("a", [("extend", 3)], False), ("a", [("replace", 0), ("truncate", 2)], False)])
# a longer one whose start differs
@example([("a", [("extend", 2)], False), ("a", [("replace", 1), ("extend", 2)], True)])
def test_shared_requests_read_back_as_plain_copies(requests: list[Any]) -> None:
    recorder = loopsim.Recorder(scenario="sharing")
    histories: dict[str, list[Message]] = {"a": [], "b": []}
    keep: list[Message] = []  # every message stays alive, so no id is reused
    pool_dumps: dict[int, dict[str, Any]] = {}
    expected: list[dict[str, Any]] = []
    counter = 0

    def new(text: str) -> Message:
        nonlocal counter
        counter += 1
        message = Message.user(f"{text} {counter}")
        keep.append(message)
        return message

    for agent, steps, as_tuple in requests:
        history = histories[agent]
        for step, amount in steps:
            if step == "extend":
                history.extend(new(agent) for _ in range(amount))
            elif step == "truncate":
                del history[amount:]
            elif step == "replace" and history:
                history[amount % len(history)] = new("replaced")
            elif step == "edit" and history:
                history[amount % len(history)].author_name = f"edited {counter}"
                counter += 1
            elif step == "diverge" and history:
                cut = amount % len(history)
                histories[agent] = history = history[cut:] + history[:cut]
        sent = tuple(history) if as_tuple else list(history)
        recorder.trace.emit("model_request", {"agent": agent, "session": None, "messages": sent})
        expected.append(
            {
                "agent": agent,
                "session": None,
                "messages": [_plain(pool_dumps, m) for m in history],
            }
        )
        # an edit after sending must not reach what was recorded
        if history:
            history[-1].author_name = f"after {counter}"
            counter += 1

    transcript = recorder.transcript
    assert [e.data for e in transcript.events] == expected
    plain = loopsim.Transcript(
        scenario="sharing",
        seed=0,
        events=[
            loopsim.TranscriptEvent(seq=i, time=0.0, kind="model_request", data=data)
            for i, data in enumerate(expected, start=1)
        ],
    )
    assert transcript.to_json() == plain.to_json()
    # each event has a list of its own, as before
    lists = [e.data["messages"] for e in transcript.events]
    assert len({id(x) for x in lists}) == len(lists)


# -- holding: slots grow linearly with the iterations, on both engines ----------------


#: The trace reaches the whole run: a walk stops there.
_TRACE = type(loopsim.Recorder().trace)


def _list_slots(root: object) -> int:
    """Slots of every distinct list reachable from ``root`` through containers and
    loopsim objects (not through the trace, functions, types or modules)."""
    skip = (type, types.ModuleType, types.FunctionType, types.MethodType, _TRACE)
    seen: set[int] = set()
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        if isinstance(obj, list):
            total += len(obj)
        module = type(obj).__module__
        if isinstance(obj, (list, tuple, dict, set, frozenset)) or module.startswith("loopsim"):
            stack.extend(gc.get_referents(obj))
    return total


def _long_loop(engine: str, iterations: int) -> tuple[Any, Any]:
    client = loopsim.FunctionChatClient(lambda *_args, **_kwargs: "again")
    if engine == "loopsim":
        loop = loopsim.LoopAgent(
            loopsim.Agent(client, name="writer"),
            [
                loopsim.DelegateLoopEvaluator(
                    lambda _context: loopsim.LoopEvaluation.continue_with_feedback("more")
                )
            ],
            loopsim.LoopAgentOptions(max_iterations=iterations),
        )

        async def run_builtin() -> str:
            return (await loop.run("go")).text

        return client, run_builtin
    import agent_framework as af

    from loopsim.agent_framework import as_chat_client

    def more(*, iteration: int, **_: Any) -> bool:
        return iteration < iterations

    agent = af.Agent(
        client=as_chat_client(client),
        name="writer",
        middleware=[af.AgentLoopMiddleware(more, max_iterations=iterations)],
    )

    async def run_af() -> str:
        return (await agent.run("go", session=agent.create_session())).text

    return client, run_af


def _held(engine: str, iterations: int) -> tuple[int, int]:
    """(slots the recorder holds, slots the client's request log holds) after the run."""
    client, program = _long_loop(engine, iterations)
    with loopsim.Recorder() as recorder:
        loopsim.simulate(program, wall_clock=False, trace=recorder.trace)
    assert len(client.requests) == iterations
    return _list_slots(recorder), _list_slots(client.requests)


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
def test_long_loop_holds_linear_slots(engine: str) -> None:
    short, long = _held(engine, 20), _held(engine, 80)
    # 4 times the iterations: about 4 times the slots when shared, about 16 when each
    # request holds a list of its own
    assert long[0] <= 6 * short[0], ("recorder", short[0], long[0])
    assert long[1] <= 6 * short[1], ("client.requests", short[1], long[1])
