"""An on-call helper that asks three specialist agents at once and keeps what came in time.

Each specialist runs concurrently (``asyncio.gather``) under the app's own 60 s budget
(``asyncio.timeout``); a specialist's notes are stamped with the wall-clock time
(``datetime.now``) by the team's tool.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import agent_framework as af
from af_programs import models

BUDGET_SECONDS = 60
SPECIALISTS = ("network", "database", "frontend")


@af.tool(approval_mode="never_require")
def log_finding(finding: str) -> str:
    """Write a finding to the incident log; returns the stamped line."""
    return f"{datetime.now(timezone.utc):%H:%M:%S} {finding}"


async def ask(name: str, incident: str) -> str:
    agent = af.Agent(
        client=models.chat_client(name),
        name=name,
        instructions=f"You are the {name} specialist. Log one finding, then summarise it.",
        tools=[log_finding],
    )
    try:
        async with asyncio.timeout(BUDGET_SECONDS):
            result = await agent.run(incident, session=agent.create_session())
    except TimeoutError:
        return f"{name}: no answer within {BUDGET_SECONDS} s"
    return f"{name}: {result.text}"


async def main(incident: str = "Checkout page returns 502.") -> list[str]:
    return list(await asyncio.gather(*(ask(name, incident) for name in SPECIALISTS)))
