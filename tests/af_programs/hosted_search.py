"""A tide desk: a harness agent that looks things up on the web and converts times.

The way a team writes it: the app gets its chat client from outside (production: a
vendor's, such as ``OpenAIChatClient()``), builds its agent with agent_framework's
``create_harness_agent`` (which adds the vendor's hosted web search by itself) and a
file search over the harbour's own tables when the client offers one. The service runs
both searches; the app reads what they found from the answer's contents to cite its
sources, and converts the UTC times the model finds with a tool of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import agent_framework as af

HARBOUR_TABLES = "vs_harbour_tables"
ZONES = {"Lisbon": 0, "Porto": 0, "Madeira": 0, "Azores": -1}


@af.tool(approval_mode="never_require")
def local_time(utc: str, port: str) -> str:
    """Convert an HH:MM time in UTC to the local time of a port."""
    hours, minutes = (int(part) for part in utc.split(":"))
    moment = datetime(2026, 6, 1, hours, minutes, tzinfo=timezone.utc)
    # summer time: one hour ahead of standard time, as Portugal keeps it
    local = moment + timedelta(hours=ZONES.get(port, 0) + 1)
    return f"{local:%H:%M}"


@dataclass
class Answer:
    """What the desk tells the caller, and where it came from."""

    text: str
    searches: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def build_desk(client: Any) -> Any:
    tools: list[Any] = [local_time]
    if isinstance(client, af.SupportsFileSearchTool):
        tools.append(client.get_file_search_tool(vector_store_ids=[HARBOUR_TABLES]))
    return af.create_harness_agent(
        client,
        name="tide_desk",
        agent_instructions="Answer with local times, and say where you found them.",
        tools=tools,
        disable_file_memory=True,  # the desk keeps no notes between calls
    )


def _read(response: Any) -> tuple[list[str], list[str]]:
    searches: list[str] = []
    sources: list[str] = []
    for message in response.messages:
        for content in message.contents:
            if content.type == "search_tool_call":
                searches.append(str(content.tool_name))
            elif content.type == "search_tool_result" and isinstance(content.result, dict):
                sources.extend(str(s) for s in content.result.get("sources", ()))
    return searches, sources


async def main(client: Any, question: str = "When is high tide in Lisbon today?") -> Answer:
    desk = build_desk(client)
    session = desk.create_session()
    response = await desk.run(question, session=session)
    searches, sources = _read(response)
    return Answer(response.messages[-1].text, searches, sources)
