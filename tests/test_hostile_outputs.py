"""What loopsim prints and records stays sane under hostile values (issue 14, item 13)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import loopsim
from loopsim import Agent, FunctionCallContent, Message, ReplayChatClient, ScriptedChatClient

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


class Thing:
    """A plain object: its default repr holds a memory address."""


@loopsim.tool
def give_thing() -> Any:
    return Thing()


@loopsim.tool
def give_nan() -> Any:
    return {"ratio": math.nan, "top": math.inf, "items": [Thing(), -math.inf]}


def _program(client: Any, tool: Any) -> Any:
    agent = Agent(client, name="worker", tools=[tool])

    async def main() -> str:
        return (await agent.run("go")).text

    return main


def _script(tool: str) -> list[Any]:
    call = FunctionCallContent(call_id="c1", name=tool, arguments={})
    return [Message("assistant", [call]), "done"]


@pytest.mark.parametrize("tool", [give_thing, give_nan], ids=["object", "nan"])
def test_tool_results_are_recorded_the_same_way_every_run(backend: str, tool: Any) -> None:
    client = ScriptedChatClient(_script(tool.name))
    _, first = loopsim.record(_program(client, tool), backend=backend, seed=3)
    text = first.to_json()
    assert " at 0x" not in text
    assert "NaN" not in text.replace('"NaN"', "")  # only the text "NaN", never a bare NaN
    again = loopsim.record(
        _program(ScriptedChatClient(_script(tool.name)), tool), backend=backend, seed=3
    )[1]
    assert again.to_json() == text
    # and the run's own replay does not diverge (a NaN never equals itself)
    replayed = loopsim.record(
        _program(ReplayChatClient(first, "worker"), tool), backend=backend, seed=3
    )[1]
    assert loopsim.diff_transcripts(first, replayed) is None


def test_an_object_result_shows_its_class_not_its_address(backend: str) -> None:
    client = ScriptedChatClient(_script("give_thing"))
    _, transcript = loopsim.record(_program(client, give_thing), backend=backend)
    (result,) = [e for e in transcript.events if e.kind == "tool_result"]
    assert result.data["result"] == "<Thing object>"


def test_validate_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    for index in range(200):
        (tmp_path / f"s{index:03}.loopsim.yaml").write_text(
            (SCENARIOS / "completion_marker.loopsim.yaml").read_text(encoding="utf-8"),
            encoding="utf-8",
        )
    with subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "loopsim", "validate", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # what `| head -1` does
        errors = process.stderr.read().decode()
        code = process.wait(timeout=120)
    assert first.startswith(b"ok ")
    assert "Traceback" not in errors
    assert "BrokenPipeError" not in errors
    assert code == 1


def test_the_version_message_names_the_writer_only_when_it_differs() -> None:
    header = {"format": "loopsim.transcript", "version": 99, "events": []}
    with pytest.raises(loopsim.TranscriptError) as same:
        loopsim.Transcript.from_dict({**header, "loopsim_version": loopsim.__version__})
    assert same.value.problem.count(loopsim.__version__) == 1
    assert "newer loopsim" in same.value.problem
    with pytest.raises(loopsim.TranscriptError) as other:
        loopsim.Transcript.from_dict({**header, "loopsim_version": "7.0.0"})
    assert "written by a newer loopsim (7.0.0)" in other.value.problem


@pytest.mark.skipif(sys.platform != "linux", reason="file names of arbitrary bytes")
def test_validate_prints_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    name = os.fsdecode(b"bad\xff.loopsim.yaml")
    (tmp_path / name).write_text(
        (SCENARIOS / "completion_marker.loopsim.yaml").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "loopsim", "validate", str(tmp_path)],
        capture_output=True,
        check=False,
        timeout=120,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"bad\\udcff" in done.stdout
    assert b"Traceback" not in done.stderr
