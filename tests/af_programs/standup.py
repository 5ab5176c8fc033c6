"""A stand-up facilitator that shuffles the speaking order with ``random``.

The tool draws with the module-level ``random`` functions, as most code does.
"""

from __future__ import annotations

import random

import agent_framework as af
from af_programs import models

TEAM = ("ana", "bo", "chen", "dara", "eli")


@af.tool(approval_mode="never_require")
def speaking_order() -> list[str]:
    """Today's speaking order (shuffled so nobody always goes first)."""
    order = list(TEAM)
    random.shuffle(order)
    return order


@af.tool(approval_mode="never_require")
def icebreaker() -> str:
    """A random icebreaker question."""
    return random.choice(["Best snack this week?", "A tool you learned?", "Last book you enjoyed?"])  # noqa: S311 - a game, not a secret


async def main() -> str:
    agent = af.Agent(
        client=models.chat_client("facilitator"),
        name="facilitator",
        instructions="Open the stand-up: the speaking order, then an icebreaker.",
        tools=[speaking_order, icebreaker],
    )
    return (await agent.run("Start the stand-up.")).text
