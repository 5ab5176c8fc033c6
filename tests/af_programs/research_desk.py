"""A research coordinator that delegates to three background agents and reports.

``web`` answers in seconds, ``archive`` takes an hour, ``quotes`` fails (its model
service is down). The coordinator keeps going while tasks run
(``background_tasks_running``) and reports what every task gave.
"""

from __future__ import annotations

import agent_framework as af
from af_programs import models


def build_desk() -> af.Agent:
    children = [
        af.Agent(
            client=models.chat_client(name),
            name=name,
            description=description,
            instructions=f"You are the {name} researcher. Answer in one line.",
        )
        for name, description in (
            ("web", "Searches the web for recent sources."),
            ("archive", "Digs through the paper archive (slow)."),
            ("quotes", "Finds quotes from experts."),
        )
    ]
    return af.Agent(
        client=models.chat_client("coordinator"),
        name="coordinator",
        instructions="Start a task per researcher, wait for them, then write the report.",
        context_providers=[af.BackgroundAgentsProvider(children, wait_timeout_seconds=1800)],
        middleware=[
            af.AgentLoopMiddleware(
                af.background_tasks_running(),
                next_message=af.background_tasks_running_message,
                max_iterations=12,
            )
        ],
    )


async def main(topic: str = "heat pumps", *, stream: bool = False) -> str:
    desk = build_desk()
    session = desk.create_session()
    if not stream:
        result = await desk.run(f"Research {topic}.", session=session)
        return result.messages[-1].text
    # the team's chat UI shows the coordinator's updates as they come
    updates = desk.run(f"Research {topic}.", session=session, stream=True)
    async for _update in updates:
        pass
    return (await updates.get_final_response()).messages[-1].text
