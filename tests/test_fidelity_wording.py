"""One background-agents program on both engines: everything but the words agrees.

The parent model drives every tool through its success and error paths; each tool
reply of the built-in engine is a WORDING text, and the real package's reply to the
same call carries the same facts (error or not, ids, statuses, names, in order).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient, af_call

import loopsim
from loopsim import FunctionCallContent, Message, ScriptedChatClient
from loopsim._wording import WORDING, agrees, match

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

P = "background_agents_"
PROGRAM: list[tuple[str, dict[str, Any]]] = [
    ("start_task", {"agent_name": "slow", "input": "dig", "description": "deep"}),
    ("start_task", {"agent_name": "Quick", "input": "skim", "description": "fast"}),
    ("start_task", {"agent_name": "nobody", "input": "x", "description": "y"}),
    ("wait_for_first_completion", {"task_ids": [1, 2]}),
    ("get_task_results", {"task_id": 2}),
    ("get_task_results", {"task_id": 1}),
    ("get_all_tasks", {}),
    ("clear_completed_task", {"task_id": 2}),
    ("clear_completed_task", {"task_id": 1}),
    ("continue_task", {"task_id": 1, "text": "more"}),
    ("continue_task", {"task_id": 99, "text": "more"}),
    ("wait_for_first_completion", {"task_ids": []}),
    ("wait_for_first_completion", {"task_ids": [2]}),
    ("wait_for_first_completion", {"task_ids": [1]}),
    ("get_task_results", {"task_id": 1}),
    ("get_all_tasks", {}),
    ("get_task_results", {"task_id": 99}),
]


class AFChild(af.BaseAgent):
    def __init__(self, name: str, delay: float) -> None:
        super().__init__(name=name, description=f"{name} worker")
        self.delay = delay

    def run(
        self, messages: Any = None, *, stream: bool = False, session: Any = None, **_: Any
    ) -> Any:
        async def go() -> af.AgentResponse:
            await asyncio.sleep(self.delay)
            return af.AgentResponse(
                messages=[af.Message(role="assistant", contents=[f"{self.name} says hi"])]
            )

        return go()


def ls_child(name: str, delay: float) -> loopsim.Agent:
    return loopsim.Agent(
        ScriptedChatClient([loopsim.Turn(f"{name} says hi", delay=delay)]),
        name=name,
        description=f"{name} worker",
    )


def run_ours() -> tuple[list[str], Any]:
    turns: list[Any] = [
        Message("assistant", [FunctionCallContent(call_id=f"c{i}", name=P + n, arguments=a)])
        for i, (n, a) in enumerate(PROGRAM)
    ]
    client = ScriptedChatClient([*turns, "all done"])
    provider = loopsim.BackgroundAgentsProvider([ls_child("slow", 10), ls_child("quick", 5)])
    agent = loopsim.Agent(client, context_providers=[provider])

    async def main() -> Any:
        return await agent.run("go", session=agent.create_session())

    response = loopsim.simulate(main)
    replies = [
        str(c.result) for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    return replies, client


def run_theirs() -> tuple[list[str], Any]:
    turns = [af_call(f"c{i}", P + n, **a) for i, (n, a) in enumerate(PROGRAM)]
    client = FakeAFChatClient([*turns, "all done"])
    provider = af.BackgroundAgentsProvider([AFChild("slow", 10), AFChild("quick", 5)])
    agent = af.Agent(client=client, context_providers=[provider])

    async def main() -> Any:
        return await agent.run("go", session=agent.create_session())

    response = loopsim.simulate(main)
    replies = [
        str(c.result) for m in response.messages for c in m.contents if c.type == "function_result"
    ]
    return replies, client


def test_every_tool_reply_agrees_once_the_words_are_set_aside() -> None:
    ours, _ = run_ours()
    theirs, _ = run_theirs()
    assert len(ours) == len(theirs) == len(PROGRAM)
    for step, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
        name = PROGRAM[step][0]
        if mine.endswith("says hi"):  # a child's own answer: no WORDING, equal as is
            assert mine == other, (step, name)
            continue
        if mine.startswith(WORDING["background.list.heading"]):
            # the listing: a heading (words) then lines in upstream's exact format
            assert mine.splitlines()[1:] == other.splitlines()[1:], (step, name)
            continue
        assert match(mine) is not None, (step, name, mine)
        assert agrees(mine, other), (step, name, mine, other)


def test_the_tools_offered_agree_in_names_and_parameters() -> None:
    _, ours = run_ours()
    _, theirs = run_theirs()
    ours_tools = {t.name: t for t in ours.requests[0].options.tools}
    theirs_tools = {t.name: t for t in theirs.requests[0][1]["tools"]}
    assert sorted(ours_tools) == sorted(theirs_tools)
    for name, tool in ours_tools.items():
        assert sorted(tool.parameters["properties"]) == sorted(
            theirs_tools[name].parameters()["properties"]
        ), name
        assert match(tool.description) is not None, name  # our own words, from WORDING


def test_the_agent_list_in_the_instructions_agrees() -> None:
    _, ours = run_ours()
    _, theirs = run_theirs()
    ours_instructions = ours.requests[0].options.instructions
    theirs_instructions = theirs.requests[0][1]["instructions"]
    assert ours_instructions.splitlines()[-2:] == theirs_instructions.splitlines()[-2:]
    assert ours_instructions.splitlines()[-2:] == ["- slow: slow worker", "- quick: quick worker"]


def test_the_fidelity_page_examples_run() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "fidelity.md").read_text("utf-8")
    code_blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert code_blocks
    for code in code_blocks:
        exec(compile(code, "docs/fidelity.md", "exec"), {"__name__": "fidelity"})  # noqa: S102 - the docs' own examples
