"""Same program + same seed ⇒ identical ids and outputs, run after run, on both backends."""

from __future__ import annotations

from typing import Any

import loopsim
from loopsim import Agent, FunctionCallContent, Message, ScriptedChatClient, Turn


def program() -> Any:
    @loopsim.tool
    def lookup(key: str) -> str:
        return key.upper()

    client = ScriptedChatClient(
        [
            Message(
                "assistant",
                [FunctionCallContent(call_id="c1", name="lookup", arguments={"key": "x"})],
            ),
            Turn("found X", delay=1.5),
            "bye",
        ]
    )
    agent = Agent(client, name="a", tools=[lookup])

    async def main() -> list[Any]:
        session = agent.create_session()
        first = await agent.run("find x", session=session)
        second = await agent.run_stream("thanks", session=session).get_final_response()
        return [
            session.session_id,
            first.model_dump(),
            second.model_dump(),
            loopsim.AgentSession().session_id,
        ]

    return main


def test_same_program_twice_gives_identical_ids_and_outputs(backend: str) -> None:
    first = loopsim.simulate(program(), backend=backend)
    second = loopsim.simulate(program(), backend=backend)
    assert first == second
    assert first[0] == "session-0001"


def test_backends_agree() -> None:
    assert loopsim.simulate(program(), backend="asyncio") == loopsim.simulate(
        program(), backend="trio"
    )
