"""release_session on both engines: a blocked wait's task is final before it returns."""

from __future__ import annotations

import asyncio
from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient, af_call

import loopsim
from loopsim import FunctionCallContent, Message, ScriptedChatClient

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

START = {"agent_name": "slow", "input": "x", "description": "job"}


class AFSlow(af.BaseAgent):
    def __init__(self) -> None:
        super().__init__(name="slow")

    def run(
        self, messages: Any = None, *, stream: bool = False, session: Any = None, **_: Any
    ) -> Any:
        async def go() -> af.AgentResponse:
            await asyncio.sleep(100)
            return af.AgentResponse(messages=[af.Message(role="assistant", contents=["late"])])

        return go()


def ls_call(call_id: str, name: str, **arguments: Any) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=call_id, name=name, arguments=arguments)]
    )


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
def test_a_wait_blocked_on_a_released_task_finalizes_it_before_release_returns(
    engine: str,
) -> None:
    if engine == "loopsim":
        slow = loopsim.Agent(ScriptedChatClient([loopsim.Turn("late", delay=100)]), name="slow")
        provider: Any = loopsim.BackgroundAgentsProvider([slow])
        parent: Any = loopsim.Agent(
            ScriptedChatClient(
                [
                    ls_call("c1", "background_agents_start_task", **START),
                    ls_call("c2", "background_agents_wait_for_first_completion", task_ids=[1]),
                    "done",
                ]
            ),
            context_providers=[provider],
        )
    else:
        provider = af.BackgroundAgentsProvider([AFSlow()])
        parent = af.Agent(
            client=FakeAFChatClient(
                [
                    af_call("c1", "background_agents_start_task", **START),
                    af_call("c2", "background_agents_wait_for_first_completion", task_ids=[1]),
                    "done",
                ]
            ),
            context_providers=[provider],
        )

    async def main() -> tuple[list[Any], list[Any], list[str]]:
        session = parent.create_session()
        run = asyncio.ensure_future(parent.run("go", session=session))
        await asyncio.sleep(1)
        before = [dict(r) for r in session.state["background_agents"]["tasks"]]
        await provider.release_session(session)
        after = [dict(r) for r in session.state["background_agents"]["tasks"]]
        response = await run
        replies = [
            str(c.result)
            for m in response.messages
            for c in m.contents
            if c.type == "function_result"
        ]
        return before, after, replies

    before, after, replies = loopsim.simulate(main)
    assert [r["status"] for r in before] == ["running"]
    assert [(r["status"], "error_text" in r) for r in after] == [("failed", True)]
    assert len(replies) == 2
    assert "failed" in replies[1]
