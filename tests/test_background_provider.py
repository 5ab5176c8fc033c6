"""BackgroundAgentsProvider: construction, instructions, what before_run injects, task model.

Also holds the doubles the other ``test_background_*`` files import: ``Child`` (a child
agent whose work takes virtual time, fails, or ignores cancellation), ``Tools`` (the six
tools of one parent session, called the way the agent calls them) and ``call`` (a
scripted tool call of the parent model).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

import loopsim
from loopsim import (
    AgentResponse,
    AgentSession,
    BackgroundAgentsProvider,
    BackgroundTaskInfo,
    BackgroundTaskStatus,
    FunctionCallContent,
    Message,
    SessionContext,
)

TOOL_NAMES = [
    "background_agents_start_task",
    "background_agents_wait_for_first_completion",
    "background_agents_get_task_results",
    "background_agents_get_all_tasks",
    "background_agents_continue_task",
    "background_agents_clear_completed_task",
]

# -- doubles ---------------------------------------------------------------------------

Work = Callable[[str, int], Awaitable[str]]


class Child(loopsim.BaseAgent):
    """A child agent: each run waits ``delay`` virtual seconds, then answers.

    ``reply`` is a str (the answer), an exception (raised), or a function
    ``(text, call_number) -> awaitable str`` for anything else. ``calls`` records
    ``(text, session, history_length_before)``; ``cancelled`` counts runs that saw a
    cancellation.
    """

    def __init__(
        self,
        name: str,
        reply: str | BaseException | Work = "done",
        *,
        delay: float = 0.0,
        description: str | None = None,
    ) -> None:
        super().__init__(name=name, description=description)
        self.reply = reply
        self.delay = delay
        self.calls: list[tuple[str, AgentSession, int]] = []
        self.cancelled = 0

    async def _run(
        self, messages: list[Message], session: AgentSession, options: Any
    ) -> AgentResponse:
        text = messages[-1].text if messages else ""
        self.calls.append((text, session, len(session.history())))
        try:
            if self.delay:
                await anyio.sleep(self.delay)
            if isinstance(self.reply, BaseException):
                raise self.reply
            answer = (
                self.reply
                if isinstance(self.reply, str)
                else await self.reply(text, len(self.calls))
            )
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        response = AgentResponse(Message.assistant(answer))
        session.add_messages([*messages, *response.messages])
        return response


async def stubborn(text: str, call_number: int) -> str:
    """Work that ignores cancellation for 1000 virtual seconds (a shielded section)."""
    with anyio.CancelScope(shield=True):
        await anyio.sleep(1000)
    return "finished anyway"


class Tools:
    """The six tools of one parent session, bound by one ``before_run``."""

    def __init__(self, context: SessionContext) -> None:
        self.context = context
        self.by_name = {tool.name: tool for tool in context.tools}

    @classmethod
    async def open(
        cls, provider: BackgroundAgentsProvider, session: AgentSession, agent: Any = None
    ) -> Tools:
        context = SessionContext(input_messages=[])
        await provider.before_run(
            agent=agent,
            session=session,
            context=context,
            state=session.state.setdefault(provider.source_id, {}),
        )
        return cls(context)

    async def invoke(self, name: str, **arguments: Any) -> Any:
        return await self.by_name[name].invoke(arguments)

    async def start(self, agent_name: str, input: str = "work", description: str = "job") -> str:
        return str(
            await self.invoke(
                "background_agents_start_task",
                agent_name=agent_name,
                input=input,
                description=description,
            )
        )

    async def wait(self, *task_ids: Any) -> str:
        return str(
            await self.invoke(
                "background_agents_wait_for_first_completion", task_ids=list(task_ids)
            )
        )

    async def results(self, task_id: Any) -> str:
        return str(await self.invoke("background_agents_get_task_results", task_id=task_id))

    async def all(self) -> str:
        return str(await self.invoke("background_agents_get_all_tasks"))

    async def cont(self, task_id: Any, text: str = "more") -> str:
        return str(await self.invoke("background_agents_continue_task", task_id=task_id, text=text))

    async def clear(self, task_id: Any) -> str:
        return str(await self.invoke("background_agents_clear_completed_task", task_id=task_id))


_call_ids = itertools.count(1)


def call(name: str, **arguments: Any) -> Message:
    """One assistant message calling tool ``name`` (a parent model's turn)."""
    return calls((name, arguments))


def calls(*items: tuple[str, dict[str, Any]]) -> Message:
    """One assistant message with several tool calls (run in order by the agent)."""
    return Message(
        "assistant",
        [
            FunctionCallContent(call_id=f"call-{next(_call_ids)}", name=name, arguments=args)
            for name, args in items
        ],
    )


def run_timed(async_fn: Callable[[], Awaitable[Any]], backend: str) -> tuple[Any, float, float]:
    """Run on a fresh virtual clock: (result, virtual seconds, real seconds)."""
    clock = loopsim.VirtualClock()
    began = time.perf_counter()
    result = clock.run(async_fn, backend=backend)
    return result, clock.elapsed, time.perf_counter() - began


def records(session: AgentSession, source_id: str = "background_agents") -> list[dict[str, Any]]:
    return list(session.state[source_id]["tasks"])


# -- construction ----------------------------------------------------------------------


def test_agents_are_required() -> None:
    with pytest.raises(ValueError, match="At least one background agent"):
        BackgroundAgentsProvider([])
    with pytest.raises(ValueError, match="At least one background agent"):
        BackgroundAgentsProvider(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", [None, "", "   "], ids=["none", "empty", "blank"])
def test_agent_names_must_not_be_blank(name: str | None) -> None:
    with pytest.raises(ValueError, match="non-empty name"):
        BackgroundAgentsProvider([Child("ok"), Child(name)])  # type: ignore[arg-type]


def test_agent_names_are_unique_ignoring_case() -> None:
    with pytest.raises(ValueError, match="Duplicate background agent name: 'research'"):
        BackgroundAgentsProvider([Child("Research"), Child("research")])
    provider = BackgroundAgentsProvider([Child("Research"), Child("Writer")])
    assert [a.name for a in provider.agents] == ["Research", "Writer"]


def test_wait_timeout_defaults_to_300() -> None:
    assert BackgroundAgentsProvider([Child("a")]).wait_timeout_seconds == 300
    assert BackgroundAgentsProvider([Child("a")], wait_timeout_seconds=7).wait_timeout_seconds == 7


@pytest.mark.parametrize(
    "bad",
    [0, -1, True, False, 1.5, 30.0, math.inf, math.nan, "30", None],
    ids=[
        "zero",
        "negative",
        "true",
        "false",
        "float",
        "integral-float",
        "inf",
        "nan",
        "str",
        "none",
    ],
)
def test_wait_timeout_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        BackgroundAgentsProvider([Child("a")], wait_timeout_seconds=bad)


def test_the_agent_list_is_checked_before_the_timeout() -> None:
    with pytest.raises(ValueError, match="At least one background agent"):
        BackgroundAgentsProvider([], wait_timeout_seconds=0)


def test_source_id_default_and_custom() -> None:
    assert BackgroundAgentsProvider([Child("a")]).source_id == "background_agents"
    assert BackgroundAgentsProvider([Child("a")], source_id="bg").source_id == "bg"


# -- instructions ----------------------------------------------------------------------


def test_default_instructions_describe_the_tools_and_list_the_agents() -> None:
    provider = BackgroundAgentsProvider(
        [Child("Research", description="finds sources"), Child("writer")]
    )
    text = provider.instructions
    assert text.startswith("## Background Agents\n\n")
    assert "background_agents_*" in text
    assert "background_agents_clear_completed_task" in text
    assert "background_agents_continue_task" in text
    assert "{background_agents}" not in text
    assert text.endswith("\n\nBackground agents you can use:\n- Research: finds sources\n- writer")


def test_custom_instructions_substitute_every_placeholder() -> None:
    provider = BackgroundAgentsProvider(
        [Child("Research", description="finds sources")],
        instructions="Custom instructions with {background_agents} and again {background_agents}",
    )
    listing = "Background agents you can use:\n- Research: finds sources"
    assert provider.instructions == f"Custom instructions with {listing} and again {listing}"


def test_custom_instructions_without_placeholder_get_no_agent_list() -> None:
    provider = BackgroundAgentsProvider([Child("Research")], instructions="Delegate wisely.")
    assert provider.instructions == "Delegate wisely."
    assert BackgroundAgentsProvider([Child("a")], instructions="").instructions == ""


# -- before_run ------------------------------------------------------------------------


def test_before_run_injects_instructions_and_exactly_six_tools(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", description="does work")])

    async def main() -> Tools:
        return await Tools.open(provider, AgentSession())

    tools = loopsim.simulate(main, backend=backend)
    assert [t.name for t in tools.context.tools] == TOOL_NAMES
    assert tools.context.instructions == [provider.instructions]
    assert tools.context.context_messages == []  # no tasks yet: no status message
    assert all(t.approval_mode == "never_require" for t in tools.context.tools)


def test_wait_tool_exposes_only_task_ids(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker")], wait_timeout_seconds=7)

    async def main() -> Tools:
        return await Tools.open(provider, AgentSession())

    tools = loopsim.simulate(main, backend=backend)
    wait = tools.by_name["background_agents_wait_for_first_completion"]
    assert list(wait.parameters["properties"]) == ["task_ids"]
    assert "7 seconds" in wait.description
    assert list(tools.by_name["background_agents_start_task"].parameters["properties"]) == [
        "agent_name",
        "input",
        "description",
    ]


def test_before_run_adds_the_current_task_list(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", delay=10), Child("fast", "quick answer")])

    async def main() -> list[str]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("Worker", description="long job")
        await tools.start("fast", description="short job")
        await anyio.sleep(1)
        again = await Tools.open(provider, session)
        return [m.text for m in again.context.context_messages]

    texts = loopsim.simulate(main, backend=backend)
    assert texts == [
        (
            "### Background tasks right now\n"
            "- Task 1 [running] (Worker): long job\n"
            "- Task 2 [completed] (fast): short job"
        )
    ]


def test_state_starts_empty_and_is_json_safe(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", "result text")])

    async def main() -> AgentSession:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        assert session.state["background_agents"] == {"next_task_id": 1, "tasks": []}
        await tools.start("worker", description="job")
        await tools.wait(1)
        return session

    session = loopsim.simulate(main, backend=backend)
    assert session.state["background_agents"] == {
        "next_task_id": 2,
        "tasks": [
            {
                "id": 1,
                "agent_name": "worker",
                "description": "job",
                "status": "completed",
                "result_text": "result text",
            }
        ],
    }
    assert AgentSession.from_dict(session.to_dict()).state == session.state


def test_provider_is_found_through_get_service() -> None:
    provider = BackgroundAgentsProvider([Child("worker")])
    agent = loopsim.Agent(loopsim.ScriptedChatClient([]), name="p", context_providers=[provider])
    assert agent.get_service(BackgroundAgentsProvider) is provider
    assert loopsim.DelegatingAgent(agent).get_service(BackgroundAgentsProvider) is provider


# -- task model ------------------------------------------------------------------------


def test_status_values_are_the_four_lowercase_strings() -> None:
    assert [s.value for s in BackgroundTaskStatus] == ["running", "completed", "failed", "lost"]
    assert BackgroundTaskStatus("lost") is BackgroundTaskStatus.LOST
    assert str(BackgroundTaskStatus.RUNNING) == "running"


def test_task_info_round_trips_and_omits_missing_texts() -> None:
    info = BackgroundTaskInfo(3, "Worker", "job", BackgroundTaskStatus.FAILED, error="boom")
    data = info.to_dict()
    assert data == {
        "id": 3,
        "agent_name": "Worker",
        "description": "job",
        "status": "failed",
        "error_text": "boom",
    }
    assert BackgroundTaskInfo.from_dict(data) == info
    assert info.is_terminal
    full = BackgroundTaskInfo(1, "a", "d", "running").to_dict(exclude_none=False)
    assert full["result_text"] is None
    assert full["error_text"] is None
    assert BackgroundTaskInfo.from_dict(full).error is None


def test_task_info_from_dict_requires_the_four_keys() -> None:
    with pytest.raises(ValueError, match="missing status"):
        BackgroundTaskInfo.from_dict({"id": 1, "agent_name": "a", "description": "d"})
    with pytest.raises(ValueError, match="not a valid BackgroundTaskStatus"):
        BackgroundTaskInfo(1, "a", "d", "sleeping")  # type: ignore[arg-type]


def test_tasks_lists_refreshed_infos_sorted_by_id(backend: str) -> None:
    provider = BackgroundAgentsProvider([Child("worker", "ok"), Child("slow", delay=50)])

    async def main() -> list[BackgroundTaskInfo]:
        session = AgentSession()
        tools = await Tools.open(provider, session)
        await tools.start("worker", description="a")
        await tools.start("slow", description="b")
        await anyio.sleep(1)
        return provider.tasks(session)

    infos = loopsim.simulate(main, backend=backend)
    assert infos == [
        BackgroundTaskInfo(1, "worker", "a", BackgroundTaskStatus.COMPLETED, result="ok"),
        BackgroundTaskInfo(2, "slow", "b", BackgroundTaskStatus.RUNNING),
    ]
