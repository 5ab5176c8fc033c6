"""Per-run isolation of what agent_framework writes to disk (issue 21 item 12).

The harness's default file memory (``{cwd}/agent-file-memory`` upstream) goes to a
temporary folder of each simulation's own, removed when the run ends; the working
directory is never touched, and a store the user passes keeps its root.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import agent_framework as af
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import FunctionCallContent, Message
from loopsim.agent_framework import as_chat_client

NOTE = "offsite on friday"


def call(name: str, **arguments: Any) -> Message:
    return Message(
        "assistant", [FunctionCallContent(call_id=f"call-{name}", name=name, arguments=arguments)]
    )


def planner(*turns: Any, **options: Any) -> tuple[af.Agent, loopsim.ScriptedChatClient]:
    """A harness agent with upstream's defaults (file memory on), behind a scripted model."""
    model = loopsim.ScriptedChatClient(list(turns), name="planner-model")
    agent = af.create_harness_agent(
        as_chat_client(model), name="planner", disable_web_search=True, **options
    )
    return agent, model


def memory_store(agent: af.Agent) -> Any:
    (provider,) = [p for p in agent.context_providers if isinstance(p, af.FileMemoryProvider)]
    return provider.store


def remembering_program(file_name: str = "plan.md", note: str = NOTE) -> Any:
    """The program under test: a harness that writes a memory file, then answers."""

    async def main() -> dict[str, Any]:
        agent, model = planner(
            call("file_memory_write", file_name=file_name, content=note), "noted"
        )
        response = await agent.run("remember the plan", session=agent.create_session())
        first_request = " ".join(m.text for m in model.requests[0].messages)
        return {"text": response.text, "saw_old_memory": file_name in first_request}

    return main


def test_three_runs_in_one_folder_are_identical_and_leave_the_folder_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runs = [loopsim.record(remembering_program()) for _ in range(3)]
    assert [result for result, _ in runs] == [{"text": "noted", "saw_old_memory": False}] * 3
    first = runs[0][1].to_json()
    assert NOTE in first  # the memory was really written (the tool call is in the transcript)
    assert [transcript.to_json() for _, transcript in runs] == [first] * 3
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    file_name=st.from_regex(r"[a-z][a-z0-9_]{0,11}\.md", fullmatch=True),
    note=st.text(
        st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40
    ),
)
def test_every_seed_and_memory_repeats_byte_for_byte(seed: int, file_name: str, note: str) -> None:
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        program = remembering_program(file_name, note)
        first, second = (loopsim.record(program, seed=seed) for _ in range(2))
        assert first[0]["saw_old_memory"] is second[0]["saw_old_memory"] is False
        assert first[1].to_json() == second[1].to_json()
        assert list(Path(folder).iterdir()) == []


def test_the_memory_lives_in_a_temporary_folder_of_the_run_removed_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    async def main() -> tuple[Path, list[str]]:
        agent, _ = planner(call("file_memory_write", file_name="plan.md", content=NOTE), "noted")
        session = agent.create_session()
        await agent.run("remember the plan", session=session)
        root = memory_store(agent).root_path
        return root, sorted(p.name for p in (root / session.session_id).iterdir())

    root, files = loopsim.simulate(main)
    assert files == ["memories.md", "plan.md"]  # written there, during the run
    assert root.name == "agent-file-memory"  # the name upstream gives it
    assert root.parent.parent == Path(tempfile.gettempdir()).resolve()
    assert not root.parent.exists()
    assert list(tmp_path.iterdir()) == []


def test_the_folder_is_removed_after_a_run_that_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[Path] = []

    async def main() -> None:
        agent, _ = planner(call("file_memory_write", file_name="plan.md", content=NOTE), "noted")
        session = agent.create_session()
        await agent.run("remember the plan", session=session)
        seen.append(memory_store(agent).root_path)
        assert (seen[0] / session.session_id / "plan.md").is_file()
        raise LookupError("the program failed after writing its memory")

    with pytest.raises(LookupError, match="after writing"):
        loopsim.simulate(main)
    assert len(seen) == 1
    assert not seen[0].parent.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_harness_built_outside_runs_in_each_simulations_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One agent and one session id for both runs: in a shared folder the second run
    # would read the first run's file. Built outside, the store keeps upstream's root.
    monkeypatch.chdir(tmp_path)
    agent, _ = planner(
        call("file_memory_write", file_name="plan.md", content=NOTE),
        "noted",
        call("file_memory_read", file_name="plan.md"),
        "nothing there",
    )
    store = memory_store(agent)
    production = (tmp_path / "agent-file-memory").resolve()
    assert store.root_path == production

    async def run(message: str) -> tuple[Path, Any]:
        response = await agent.run(message, session=agent.create_session(session_id="one"))
        return store.root_path, response

    first_root, _ = loopsim.simulate(run, "remember the plan")
    second_root, second = loopsim.simulate(run, "what was the plan?")
    results = [c.result for m in second.messages for c in m.contents if c.type == "function_result"]
    assert results == ["File 'plan.md' not found."]
    assert first_root != second_root
    assert production not in (first_root, second_root)
    assert store.root_path == production  # and upstream's root again after the runs
    assert list(tmp_path.iterdir()) == []


def test_simulations_running_at_once_in_two_threads_get_two_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    both_inside = threading.Barrier(2, timeout=30)
    roots: dict[str, Path] = {}

    async def main(name: str) -> None:
        agent, _ = planner(call("file_memory_write", file_name="plan.md", content=name), "noted")
        await agent.run("remember", session=agent.create_session(session_id="same"))
        roots[name] = memory_store(agent).root_path
        await asyncio.to_thread(both_inside.wait)  # the other run is inside too
        assert (roots[name] / "same" / "plan.md").read_text(encoding="utf-8") == name

    threads = [threading.Thread(target=loopsim.simulate, args=(main, name)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(roots) == ["a", "b"]
    assert roots["a"] != roots["b"]
    assert not roots["a"].exists()
    assert not roots["b"].exists()
    assert list(tmp_path.iterdir()) == []


def test_a_store_the_user_passes_keeps_its_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "my-memory"

    async def main() -> Path:
        agent, _ = planner(
            call("file_memory_write", file_name="plan.md", content=NOTE),
            "noted",
            file_memory_store=af.FileSystemAgentFileStore(mine),
        )
        await agent.run("remember the plan", session=agent.create_session(session_id="s"))
        return memory_store(agent).root_path

    assert loopsim.simulate(main) == mine.resolve()
    assert (mine / "s" / "plan.md").read_text(encoding="utf-8") == NOTE
    assert [p.name for p in tmp_path.iterdir()] == ["my-memory"]


def test_a_file_access_store_the_user_passes_keeps_its_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The other store create_harness_agent takes: opt-in, always the user's.
    monkeypatch.chdir(tmp_path)
    shared = af.FileSystemAgentFileStore(tmp_path / "shared")

    async def main() -> Path:
        planner("noted", file_access_store=shared, disable_file_memory=True)
        await shared.write("notes.md", NOTE)
        return shared.root_path

    assert loopsim.simulate(main) == (tmp_path / "shared").resolve()
    assert (tmp_path / "shared" / "notes.md").read_text(encoding="utf-8") == NOTE


def test_outside_a_simulation_the_harness_writes_where_upstream_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Production behaviour is unchanged: loopsim only redirects inside its simulations.
    monkeypatch.chdir(tmp_path)
    agent, _ = planner(call("file_memory_write", file_name="plan.md", content=NOTE), "noted")
    asyncio.run(agent.run("remember the plan", session=agent.create_session(session_id="s")))
    assert (tmp_path / "agent-file-memory" / "s" / "plan.md").read_text(encoding="utf-8") == NOTE


# A program that builds its harness agents before loopsim is imported at all, with a model
# of its own written from agent_framework's public API; loopsim.agent_framework is
# imported afterwards (as any test of it does). A subprocess, so the import order is real.
BUILT_BEFORE_LOOPSIM = """
import asyncio
import os
import sys
from pathlib import Path

import agent_framework as af

assert not [name for name in sys.modules if name.startswith("loopsim")]


class Model(af.FunctionInvocationLayer, af.BaseChatClient):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.requests = []

    def _inner_get_response(self, *, messages, stream, options, **kwargs):
        async def answer():
            self.calls += 1
            self.requests.append(" ".join(m.text for m in messages))
            if self.calls % 2:
                call = af.Content.from_function_call(
                    call_id=f"call-{self.calls}",
                    name="file_memory_write",
                    arguments={"file_name": "plan.md", "content": "offsite"},
                )
                return af.ChatResponse(messages=[af.Message("assistant", [call])])
            return af.ChatResponse(messages=[af.Message("assistant", ["noted"])])

        return answer()


def harness(**options):
    model = Model()
    agent = af.create_harness_agent(model, name="planner", disable_web_search=True, **options)
    return agent, model


default, default_model = harness()
mine, _ = harness(file_memory_store=af.FileSystemAgentFileStore(Path("mine")))
# the user's, though named like upstream's folder: not in the working directory itself
named, _ = harness(file_memory_store=af.FileSystemAgentFileStore(Path("keep/agent-file-memory")))

import loopsim
{adapter}

async def run(agent):
    response = await agent.run("remember the plan", session=agent.create_session(session_id="s"))
    return response.text


for _ in range(2):
    assert loopsim.simulate(run, default) == "noted"
assert loopsim.simulate(run, mine) == loopsim.simulate(run, named) == "noted"
# in a shared folder the second run's model would be sent the first run's memory index
assert ["plan.md" in request for request in default_model.requests] == [False] * 4
print(sorted(os.listdir(".")), os.listdir("mine/s") == os.listdir("keep/agent-file-memory/s"))
assert "loopsim.agent_framework" in sys.modules  # the first simulation imported it
asyncio.run(run(default))  # outside a simulation: where upstream puts it
print(sorted(os.listdir(".")))
"""


@pytest.mark.parametrize(
    "adapter",
    ["import loopsim.agent_framework", "# (loopsim.agent_framework not imported)"],
    ids=["adapter-imported-after", "adapter-never-imported"],
)
def test_a_harness_built_before_loopsim_is_imported_writes_nothing_in_the_folder(
    tmp_path: Path, adapter: str
) -> None:
    program = BUILT_BEFORE_LOOPSIM.replace("{adapter}", adapter)
    done = subprocess.run(  # noqa: S603 - our own program, run by this interpreter
        [sys.executable, "-W", "ignore", "-c", program],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(loopsim.__file__).parents[1])},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['keep', 'mine'] True",  # the user's roots kept, nothing else written
        "['agent-file-memory', 'keep', 'mine']",
    ]
