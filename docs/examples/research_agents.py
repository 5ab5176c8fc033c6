"""A team's own agent_framework agents, built by factories a scenario file names.

Each factory gets the scripted chat client loopsim made for that agent (already an
agent_framework chat client) and the agent's name, and returns the real agent: its
instructions, tools and middleware are the team's own code, under test.
"""

from __future__ import annotations

from typing import Any

import agent_framework as af


def lookup_citation(topic: str) -> str:
    """Find the canonical citation for a topic (a team's real tool would call a service)."""
    return f"[{topic.upper()}-2026]"


class CountRuns(af.AgentMiddleware):
    """The team's middleware: counts the runs of its agent."""

    runs = 0

    async def process(self, context: af.AgentContext, call_next: Any) -> None:
        CountRuns.runs += 1
        await call_next()


def researcher(client: Any, name: str) -> af.Agent:
    """The agent under test: its instructions, a tool, a middleware."""
    return af.Agent(
        client=client,
        name=name,
        instructions="Answer with one sentence and cite your source.",
        tools=[af.tool(lookup_citation, approval_mode="never_require")],
        middleware=[CountRuns()],
    )
