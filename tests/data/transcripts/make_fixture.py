"""Regenerates loop_background.transcript.json and its text rendering loop_background.txt
(run from the repo root; review the diff).

The fixture is committed: the rendering tests read the file, not this program, so they
pin the renderers even when the loop or the provider change.
"""

from __future__ import annotations

from pathlib import Path

import loopsim
from loopsim._background import BackgroundAgentsProvider
from loopsim._messages import FunctionCallContent, Message, Usage

HERE = Path(__file__).parent


def call(call_id: str, name: str, **arguments: object) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=call_id, name=name, arguments=arguments)]
    )


def build() -> loopsim.LoopAgent:
    web = loopsim.Agent(
        loopsim.ScriptedChatClient([loopsim.Turn("3 sources on X", delay=30)]), name="web"
    )
    notes = loopsim.Agent(
        loopsim.ScriptedChatClient([loopsim.Turn("notes: X is Y", delay=45)]), name="notes"
    )
    provider = BackgroundAgentsProvider([web, notes])
    parent = loopsim.Agent(
        loopsim.ScriptedChatClient(
            [
                call(
                    "c1",
                    "background_agents_start_task",
                    agent_name="web",
                    input="find sources on X",
                    description="search X",
                ),
                call(
                    "c2",
                    "background_agents_start_task",
                    agent_name="notes",
                    input="summarize X",
                    description="summarize X",
                ),
                loopsim.Turn("started", usage=Usage(input_tokens=12, output_tokens=3)),
                call("c3", "background_agents_wait_for_first_completion", task_ids=[1, 2]),
                call("c4", "background_agents_wait_for_first_completion", task_ids=[2]),
                loopsim.Turn(
                    "X is Y, per 3 sources. DONE", usage=Usage(input_tokens=40, output_tokens=9)
                ),
            ]
        ),
        name="parent",
        context_providers=[provider],
    )
    return loopsim.LoopAgent(
        parent,
        [loopsim.CompletionMarkerLoopEvaluator("DONE")],
        loopsim.LoopAgentOptions(max_iterations=3),
    )


async def main() -> str:
    loop = build()
    return (await loop.run("Research X")).text


if __name__ == "__main__":
    _, transcript = loopsim.record(main, scenario="loop_background", seed=7)
    loopsim.write_transcript(HERE / "loop_background.transcript.json", transcript)
    text = loopsim.render_text(transcript)
    (HERE / "loop_background.txt").write_text(text, encoding="utf-8")
    print(text, end="")  # noqa: T201 - a maintenance script
