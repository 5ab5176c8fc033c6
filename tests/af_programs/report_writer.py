"""A report writer that asks its model service for a background response and polls it.

The service runs the long request in the background (``background=True``) and answers at
once with a continuation token; the app checks back every ``POLL_SECONDS`` with that
token until the report is ready, and tells the user how many times it looked.
"""

from __future__ import annotations

import asyncio

import agent_framework as af
from af_programs import models

POLL_SECONDS = 30


async def main(topic: str = "Q3 churn") -> tuple[str, int]:
    writer = af.Agent(
        client=models.chat_client("writer"),
        name="writer",
        instructions="You write short, sourced business reports.",
    )
    session = writer.create_session()
    response = await writer.run(
        f"Write the report on {topic}.", session=session, options={"background": True}
    )
    polls = 0
    while response.continuation_token is not None:
        await asyncio.sleep(POLL_SECONDS)
        polls += 1
        token = response.continuation_token
        response = await writer.run(session=session, options={"continuation_token": token})
    return response.text, polls
