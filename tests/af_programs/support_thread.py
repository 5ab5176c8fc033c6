"""A help-desk chat on a service that keeps the conversation (Responses-API style).

The service stores the history and returns a conversation id; the app keeps only the
session (and could persist ``session.to_dict()`` between requests), so each turn sends
just the customer's new message.
"""

from __future__ import annotations

import agent_framework as af
from af_programs import models


async def main(
    questions: tuple[str, ...] = ("My router blinks red.", "It still blinks."),
) -> dict[str, object]:
    agent = af.Agent(
        client=models.chat_client("helpdesk"),
        name="helpdesk",
        instructions="You are a patient network support agent.",
    )
    session = agent.create_session()
    answers = []
    for question in questions:
        # between turns the app stores the session and loads it again, as a web app would
        session = af.AgentSession.from_dict(session.to_dict())
        answers.append((await agent.run(question, session=session)).text)
    return {"answers": answers, "conversation": session.service_session_id}
