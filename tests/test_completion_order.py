"""Same-instant completions: which task the parent sees first is the simulation's choice.

Without a tie breaker the first requested task wins (upstream's rule), and so it does in
a scenario run by default, whatever the seed; the ``ties:`` list pins other choices, and
under hypothesis (``vary:``) the choice is drawn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim import AgentResponse, AgentSession, BackgroundAgentsProvider, Message, SessionContext
from loopsim._background._ties import TIE_BREAKER
from loopsim._scenario import load_scenario_text, run_scenario, run_vary
from loopsim._trace import Trace

TIE = """\
version: 1
seed: {seed}
backend: {backend}
agents:
  boss: {{policy: coordinator}}
  a: {{policy: {{echo: {{delay: 7}}}}}}
  b: {{policy: {{echo: {{delay: 7}}}}}}
  c: {{policy: {{echo: {{delay: 7}}}}}}
parent: {{agent: boss, background_agents: [a, b, c]}}
{ties}
steps:
  - run: go
expect:
  elapsed: 7
  task_counts: {{running: 0}}
"""


def _order(seed: int, backend: str, ties: str = "") -> tuple[list[int], list[int]]:
    """(ids in the order their statuses were finalized, the tie choices) of one run."""
    loaded = load_scenario_text(TIE.format(seed=seed, backend=backend, ties=ties))
    result = run_scenario(loaded)
    assert result.passed, result.report(tail=0)
    finalized = [
        e.data["task_id"]
        for e in result.events
        if e.kind == "task_status" and e.data["status"] == "completed"
    ]
    return finalized, result.ties


def test_a_seed_always_gives_the_same_order(backend: str) -> None:
    runs = [_order(11, backend) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert sorted(runs[0][0]) == [1, 2, 3]


def test_the_order_is_the_same_on_both_backends() -> None:
    for seed in range(8):
        assert _order(seed, "asyncio") == _order(seed, "trio")


def test_the_seed_does_not_change_the_default_order(backend: str) -> None:
    # upstream's rule: the first requested of the finished tasks; the next wait finds the
    # other two already finished (no tie), and takes the first requested again
    orders = {seed: _order(seed, backend) for seed in range(12)}
    assert set(map(str, orders.values())) == {str(([1, 2, 3], [0]))}


VARIED_TIE = """\
version: 1
agents:
  boss: {{policy: coordinator}}
  left: {{policy: {{echo: {{delay: 7}}}}}}
  right: {{policy: {{echo: {{delay: 7}}}}}}
parent: {{agent: boss, background_agents: [left, right]}}
{ties}
steps:
  - run: go
vary:
  agents.left.policy.echo.prefix: {{one_of: ["echo: ", "said: "]}}
vary_settings: {{max_examples: 30}}
always:
  response: {{contains: {order}}}
"""

LEFT, RIGHT = "task 1 (left)", "task 2 (right)"


@pytest.mark.parametrize(
    ("ties", "order", "found"),
    [("", [LEFT, RIGHT], [1]), ("ties: [1]", [RIGHT, LEFT], [0])],
    ids=["draws-find-right-first", "draws-find-left-first"],
)
def test_vary_draws_both_orders_of_a_tie(ties: str, order: list[str], found: list[int]) -> None:
    # the file as written passes (its own order), and `always:` demands that order in
    # every draw: the draws must reach the other order, or this property fails
    loaded = load_scenario_text(VARIED_TIE.format(ties=ties, order=json.dumps(order)))
    assert run_scenario(loaded, blocks=("always",)).passed
    run = run_vary(loaded, seeded=True)
    assert not run.result.passed
    assert run.result.ties == found


def test_the_ties_list_pins_the_choices(backend: str) -> None:
    # first tie: all three finished, index 2 → task 3; second: tasks 1 and 2 left, both
    # already finished when the wait is called, so no tie (first requested wins)
    finalized, ties = _order(5, backend, ties="ties: [2]")
    assert finalized == [3, 1, 2]
    assert ties == [2]


def test_an_out_of_range_or_unused_tie_choice_fails_the_scenario() -> None:
    loaded = load_scenario_text(TIE.format(seed=0, backend="asyncio", ties="ties: [7, 0]"))
    messages = [(f.location, f.kind) for f in run_scenario(loaded).failures]
    assert messages == [("ties[0]", "expectation"), ("ties[1]", "unused")]


# -- the provider on its own --------------------------------------------------------------


class Child(loopsim.BaseAgent):
    async def _run(self, messages: list[Message], session: AgentSession, options: Any) -> Any:
        await anyio.sleep(10)
        return AgentResponse(Message.assistant(f"{self.name} done"))


def _winner(task_order: Sequence[int], chooser: Any, backend: str) -> str:
    """Start tasks a, b, c (all end at t=10), wait for ``task_order``, return the reply."""
    provider = BackgroundAgentsProvider([Child(name=n) for n in "abc"])

    async def main() -> str:
        session = AgentSession()
        context = SessionContext(input_messages=[])
        state = session.state.setdefault(provider.source_id, {})
        await provider.before_run(agent=None, session=session, context=context, state=state)
        tools = {t.name: t for t in context.tools}
        for name in "abc":
            await tools["background_agents_start_task"].invoke(
                {"agent_name": name, "input": "x", "description": name}
            )
        wait = tools["background_agents_wait_for_first_completion"]
        reply = await wait.invoke({"task_ids": list(task_order)})
        await provider.release_session(session)
        return str(reply)

    trace = Trace(seed=0)
    if chooser is not None:
        trace.resources[TIE_BREAKER] = chooser
    clock = loopsim.VirtualClock(wall_clock=False)
    return str(clock.run(main, backend=backend, trace=trace))


def test_without_a_tie_breaker_the_first_requested_task_wins(backend: str) -> None:
    assert _winner([3, 1, 2], None, backend) == "Task 3 ended with status: completed."


@given(order=st.permutations([1, 2, 3]), data=st.data())
def test_the_tie_breaker_decides_among_the_requested_tasks(
    order: list[int], data: st.DataObject
) -> None:
    seen: list[list[int]] = []
    chosen: list[int] = []

    def chooser(task_ids: Sequence[int]) -> int:
        seen.append(list(task_ids))
        chosen.append(data.draw(st.integers(0, len(task_ids) - 1), label="tie"))
        return chosen[-1]

    backend = data.draw(st.sampled_from(["asyncio", "trio"]), label="backend")
    reply = _winner(order, chooser, backend)
    assert seen == [order]  # every tied task, in the requested order, asked once
    assert reply == f"Task {order[chosen[0]]} ended with status: completed."
