"""An offsite planner built on agent_framework's harness (``create_harness_agent``).

The harness brings todos, modes, file memory and background agents; the team adds its
budget tool and a venue scout as a background agent, and loops while todos remain.
Web search is off (the team's planner does not search the web).
"""

from __future__ import annotations

import agent_framework as af
from af_programs import models

BUDGET = 4000


@af.tool(approval_mode="never_require")
def budget_left(spent: int = 0) -> int:
    """What is left of the offsite budget after ``spent``."""
    return BUDGET - spent


def build_planner() -> af.Agent:
    scout = af.Agent(
        client=models.chat_client("scout"),
        name="scout",
        description="Finds and compares venues.",
        instructions="Suggest one venue with its price.",
    )
    return af.create_harness_agent(
        models.chat_client("planner"),
        name="planner",
        agent_instructions="Plan the offsite: keep todos, note decisions in memory.",
        tools=[budget_left],
        background_agents=[scout],
        background_agents_wait_timeout_seconds=900,
        loop_should_continue=af.todos_remaining(),
        loop_next_message=af.todos_remaining_message,
        loop_max_iterations=5,
        disable_web_search=True,
    )


async def main(goal: str = "Plan the team offsite for 12 people.") -> str:
    planner = build_planner()
    result = await planner.run(goal, session=planner.create_session())
    return result.messages[-1].text
