"""Ids agent_framework makes with uuid4 come from the simulation, and only inside one."""

from __future__ import annotations

import threading
import uuid

import agent_framework as af
import pytest
from af_anchor import build, parent_script, run_anchor

import loopsim
from loopsim.agent_framework import _ids, as_chat_client

_VERSION_BITS = (0xF << 76) | (0x3 << 62)


def numbered(value: uuid.UUID | str) -> bool:
    """True for a simulated id: UUID(int=n, version=4) with a small counter n."""
    number = uuid.UUID(str(value)).int & ~_VERSION_BITS
    return number < 2**32


def transcript_bytes(seed: int = 0) -> bytes:
    _, transcript = loopsim.record(run_anchor, seed=seed, scenario="anchor")
    return transcript.model_dump_json().encode()


def test_two_runs_of_the_anchor_program_give_byte_identical_transcripts() -> None:
    first = transcript_bytes()
    assert first == transcript_bytes()
    assert first == transcript_bytes()
    assert b"00000000-0000-4000-8000-" in first  # session ids came from the counter


def test_ids_inside_a_simulation_are_numbered_and_restart_each_simulation() -> None:
    async def make() -> tuple[str, str, str]:
        agent = af.Agent(client=as_chat_client(loopsim.ScriptedChatClient([])), name="a")
        return str(uuid.uuid4()), agent.id, agent.create_session().session_id

    first = loopsim.simulate(make)
    assert first == loopsim.simulate(make)
    assert all(numbered(value) for value in first)
    assert len(set(first)) == 3
    assert all(uuid.UUID(value).version == 4 for value in first)


def test_tool_call_occurrence_ids_are_deterministic() -> None:
    @af.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    def run_once() -> list[str | None]:
        scripted = loopsim.ScriptedChatClient(
            [
                loopsim.Message(
                    "assistant", [loopsim.FunctionCallContent(call_id="c1", name="ping")]
                ),
                "done",
            ]
        )
        agent = af.Agent(client=as_chat_client(scripted), name="a", tools=[ping])
        result = loopsim.simulate(agent.run, "go")
        return [c.id for m in result.messages for c in m.contents if c.type == "function_call"]

    ids = run_once()
    assert ids
    assert all(i is not None and i.startswith("af-call-") for i in ids)
    assert ids == run_once()


def test_uuid4_stays_random_outside_a_simulation() -> None:
    assert uuid.uuid4 is _ids.simulated_uuid4  # the replacement is installed...
    values = {uuid.uuid4() for _ in range(20)}
    assert len(values) == 20
    assert not any(numbered(v) for v in values)  # ...and random here
    outside = af.Agent(client=as_chat_client(loopsim.ScriptedChatClient([])), name="a")
    assert not numbered(outside.id)


def test_uuid4_stays_random_in_another_thread_during_a_simulation() -> None:
    seen: dict[str, uuid.UUID] = {}

    def in_thread() -> None:
        seen["thread"] = uuid.uuid4()

    async def main() -> None:
        seen["simulation"] = uuid.uuid4()
        thread = threading.Thread(target=in_thread)
        thread.start()
        thread.join()

    loopsim.simulate(main)
    assert numbered(seen["simulation"])
    assert not numbered(seen["thread"])


def test_a_different_program_gives_a_different_transcript() -> None:
    # the byte comparison above can fail: change one scripted reply and it does
    async def other() -> str:
        turns = parent_script()
        turns[-1] = "all done, differently"
        parent, _ = build(turns)
        return (await parent.run("Research X.", session=parent.create_session())).text

    _, transcript = loopsim.record(other, scenario="anchor")
    assert transcript.model_dump_json().encode() != transcript_bytes()


@pytest.mark.parametrize("name", ["original_uuid4", "simulated_uuid4", "install"])
def test_the_id_module_keeps_its_names(name: str) -> None:
    assert callable(getattr(_ids, name))
