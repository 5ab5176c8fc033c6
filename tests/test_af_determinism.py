"""agent_framework's uuid4 ids inside a simulation: seeded, random-looking, never colliding."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections import Counter

import agent_framework as af
import pytest
from af_anchor import build, parent_script, run_anchor

import loopsim
from loopsim.agent_framework import _ids, as_chat_client, instrument


def transcript_bytes(seed: int = 0) -> bytes:
    _, transcript = loopsim.record(run_anchor, seed=seed, scenario="anchor")
    return transcript.model_dump_json().encode()


def test_runs_of_the_anchor_program_give_byte_identical_transcripts() -> None:
    first = transcript_bytes()
    assert first == transcript_bytes()
    assert first == transcript_bytes()
    assert b"00000000-0000-4000-8000-" not in first  # not a counter in uuid clothing
    assert first != transcript_bytes(seed=1)  # the ids follow the seed


def test_ids_inside_a_simulation_are_seeded_uuids_and_restart_each_simulation() -> None:
    async def make() -> tuple[str, str, str]:
        agent = af.Agent(client=as_chat_client(loopsim.ScriptedChatClient([])), name="a")
        return str(uuid.uuid4()), agent.id, agent.create_session().session_id

    first = loopsim.simulate(make)
    assert first == loopsim.simulate(make)
    assert len(set(first)) == 3
    assert all(uuid.UUID(value).version == 4 for value in first)
    assert len({value[:8] for value in first}) == 3  # no shared prefix


@pytest.mark.filterwarnings("ignore:\\[FIDES\\]")  # the store is experimental upstream
def test_the_content_variable_store_keeps_two_values_apart() -> None:
    # agent_framework's store keys values on the first 16 hex digits of a uuid4
    from agent_framework.security import ContentLabel, ContentVariableStore, IntegrityLabel

    async def store_two() -> list[object]:
        store = ContentVariableStore()
        label = ContentLabel(integrity=IntegrityLabel.UNTRUSTED)
        first, second = store.store("first", label), store.store("second", label)
        return [first != second, store.retrieve(first)[0], store.retrieve(second)[0]]

    result = loopsim.simulate(store_two)
    assert result == [True, "first", "second"]


def test_tool_call_ids_cut_short_do_not_collide() -> None:
    # agent_framework's call occurrence ids are f"af-call-{uuid4().hex}"
    async def calls() -> list[str]:
        return [f"TRADE-{uuid.uuid4().hex[:8]}" for _ in range(10_000)]

    ids = loopsim.simulate(calls)
    assert max(Counter(ids).values()) == 1


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
    values = {uuid.uuid4() for _ in range(20)}
    assert len(values) == 20
    outside = af.Agent(client=as_chat_client(loopsim.ScriptedChatClient([])), name="a")
    assert outside.id != af.Agent(client=as_chat_client(loopsim.ScriptedChatClient([]))).id
    assert _ids.original_uuid4().version == 4


def test_an_agent_and_session_made_before_the_simulation_get_stable_labels() -> None:
    def run_once() -> bytes:
        client = as_chat_client(loopsim.ScriptedChatClient(["hi"]))
        agent = instrument(af.Agent(client=client))  # unnamed: labelled by its random id
        session = agent.create_session()

        async def main() -> str:
            return (await agent.run("x", session=session)).text

        result, transcript = loopsim.record(main)
        assert result == "hi"
        data = [e.data for e in transcript.events]
        assert {d.get("session") for d in data} == {"outside-0002"}
        assert {d.get("agent") for d in data} == {"outside-0001"}
        assert session.session_id not in transcript.model_dump_json()
        return transcript.model_dump_json().encode()

    assert run_once() == run_once()


def test_importing_agent_framework_before_loopsim_changes_nothing() -> None:
    program = textwrap.dedent(
        """
        import agent_framework as af
        from agent_framework._tools import uuid4 as bound_early

        import loopsim
        from loopsim.agent_framework import as_chat_client

        async def ids():
            agent = af.Agent(client=as_chat_client(loopsim.ScriptedChatClient([])), name="a")
            return agent.id, agent.create_session().session_id, str(bound_early())

        a, b = loopsim.simulate(ids), loopsim.simulate(ids)
        assert a == b, (a, b)
        print("ok")
        """
    )
    done = subprocess.run(  # noqa: S603 - our own program, run by this interpreter
        [sys.executable, "-W", "ignore", "-c", program],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


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
