"""Tests written the way Microsoft's harness tests are, run on both packages unchanged.

Every test takes ``fw``: the ``agent_framework`` module or ``loopsim``, and uses only
names both have (``BaseChatClient`` with ``_inner_get_response``, ``ResponseStream(gen,
finalizer=)``, ``ChatResponseUpdate(conversation_id=, finish_reason=)``, the ``Content``
factories, ``run(stream=True)``, ``create_harness_agent``, ``get_session``, tools'
``invoke(skip_parsing=True)``). A copy of such a test with only its imports changed runs
on loopsim: that is what is checked here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from types import ModuleType
from typing import Any

import agent_framework
import pytest

import loopsim

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


@pytest.fixture(params=["agent_framework", "loopsim"])
def fw(request: pytest.FixtureRequest) -> ModuleType:
    return agent_framework if request.param == "agent_framework" else loopsim


def make_fake(fw: ModuleType, replies: list[Any], *, stores: bool = False) -> Any:
    """A fake chat client as upstream's tests write one."""

    class FakeChatClient(fw.FunctionInvocationLayer[Any], fw.BaseChatClient[Any]):
        STORES_BY_DEFAULT = stores

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.replies = list(replies)
            self.seen: list[tuple[list[tuple[str, str]], Any]] = []

        def _inner_get_response(
            self, *, messages: Sequence[Any], stream: bool, options: Any, **kwargs: Any
        ) -> Any:
            self.seen.append(
                (
                    [(str(m.role), m.text) for m in messages],
                    options.get("conversation_id"),
                )
            )
            reply = self.replies.pop(0)
            if not stream:

                async def answer() -> Any:
                    return reply

                return answer()

            async def updates() -> AsyncIterator[Any]:
                for message in reply.messages:
                    yield fw.ChatResponseUpdate(
                        role=message.role,
                        contents=list(message.contents),
                        conversation_id=reply.conversation_id,
                        finish_reason="stop",
                    )

            return fw.ResponseStream(updates(), finalizer=fw.ChatResponse.from_updates)

    return FakeChatClient()


def text(fw: ModuleType, words: str, conversation_id: str | None = None) -> Any:
    message = fw.Message(role="assistant", contents=[fw.Content.from_text(words)])
    return fw.ChatResponse(messages=[message], conversation_id=conversation_id)


def call(fw: ModuleType, call_id: str, name: str, **arguments: Any) -> Any:
    content = fw.Content.from_function_call(call_id=call_id, name=name, arguments=arguments)
    return fw.ChatResponse(messages=[fw.Message(role="assistant", contents=[content])])


async def collect(stream: Any) -> tuple[list[Any], Any]:
    updates = [update async for update in stream]
    return updates, await stream.get_final_response()


def test_a_streamed_run_yields_updates_and_a_final_response(fw: ModuleType) -> None:
    client = make_fake(fw, [text(fw, "Hello there")])
    agent = fw.Agent(client=client, name="greeter")

    async def main() -> tuple[list[Any], Any]:
        return await collect(agent.run("hi", stream=True))

    updates, final = loopsim.simulate(main)
    assert "".join(u.text for u in updates) == "Hello there"
    assert final.text == "Hello there"
    assert client.seen == [([("user", "hi")], None)]


def test_a_tool_call_runs_and_its_result_goes_back(fw: ModuleType) -> None:
    @fw.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    client = make_fake(fw, [call(fw, "c1", "add", a=2, b=3), text(fw, "five")])
    agent = fw.Agent(client=client, tools=[add])

    async def main() -> tuple[list[Any], Any]:
        return await collect(agent.run("2 + 3?", stream=True))

    _, final = loopsim.simulate(main)
    assert final.text == "five"
    assert [role for role, _ in client.seen[1][0]] == ["user", "assistant", "tool"]
    assert asyncio.run(add.invoke(arguments={"a": 1, "b": 1}, skip_parsing=True)) == 2


def test_a_service_conversation_sends_only_new_messages(fw: ModuleType) -> None:
    client = make_fake(fw, [text(fw, "one", "conv-1"), text(fw, "two", "conv-1")], stores=True)
    agent = fw.Agent(client=client)

    async def main() -> Any:
        session = agent.create_session()
        await collect(agent.run("hi", session=session, stream=True))
        await agent.run("again", session=session)
        return session.service_session_id

    assert loopsim.simulate(main) == "conv-1"
    assert client.seen == [([("user", "hi")], None), ([("user", "again")], "conv-1")]


def test_get_session_sends_the_service_session_id(fw: ModuleType) -> None:
    client = make_fake(fw, [text(fw, "ok", "thread-9")], stores=True)
    agent = fw.Agent(client=client)

    async def main() -> Any:
        session = agent.get_session("thread-9")
        await collect(agent.run("resume", session=session, stream=True))
        return session.service_session_id

    assert loopsim.simulate(main) == "thread-9"
    assert client.seen == [([("user", "resume")], "thread-9")]


def test_a_harness_delegates_to_a_background_agent(fw: ModuleType) -> None:
    child = fw.Agent(client=make_fake(fw, [text(fw, "found it")]), name="researcher")
    start = {"agent_name": "researcher", "input": "look", "description": "look"}
    parent = make_fake(
        fw,
        [
            call(fw, "c1", "background_agents_start_task", **start),
            call(fw, "c2", "background_agents_wait_for_first_completion", task_ids=[1]),
            call(fw, "c3", "background_agents_get_task_results", task_id=1),
            text(fw, "The researcher found it."),
        ],
    )
    harness = fw.create_harness_agent(
        parent,
        name="lead",
        background_agents=[child],
        harness_instructions="",
        disable_tool_auto_approval=True,
        disable_todo=True,
        disable_mode=True,
        disable_file_memory=True,
        disable_compaction=True,
        disable_web_search=True,
    )

    async def main() -> Any:
        session = harness.create_session()
        _, final = await collect(harness.run("research", session=session, stream=True))
        return final.text

    assert loopsim.simulate(main) == "The researcher found it."
    # the last request carries the child's result as the tool's answer
    assert parent.seen[3][0][-1] == ("tool", "")
    assert len(parent.seen) == 4


def test_agent_context_is_what_agent_middleware_sees(fw: ModuleType) -> None:
    seen: list[Any] = []

    class Spy(fw.AgentMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            seen.append(isinstance(context, fw.AgentContext))
            await call_next()

    agent = fw.Agent(client=make_fake(fw, [text(fw, "hi")]), middleware=[Spy()])
    assert loopsim.simulate(agent.run, "hello").text == "hi"
    assert seen == [True]
