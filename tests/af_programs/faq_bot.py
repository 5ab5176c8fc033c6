"""An FAQ bot whose agent and session are built once, at import time.

Many apps do this (a module-level agent, shared by every request; a session per
request). The agent, and its id, are made before any simulation runs.
"""

from __future__ import annotations

import agent_framework as af
from af_programs import models

SHIPPING_DAYS = {"EU": 3, "US": 5}


@af.tool(approval_mode="never_require")
def shipping_days(region: str) -> int:
    """Working days to deliver to a region."""
    return SHIPPING_DAYS.get(region.upper(), 10)


FAQ = af.Agent(
    client=models.chat_client("faq"),
    name=None,  # unnamed: known only by its (random) id
    instructions="Answer shipping questions with the shipping_days tool.",
    tools=[shipping_days],
)


async def main(question: str = "How long to the US?") -> str:
    return (await FAQ.run(question, session=FAQ.create_session())).text
