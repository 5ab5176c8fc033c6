"""The text rendering's time column: seconds since the previous event, so a timing change
touches only the lines where time passes differently (snapshots stay reviewable)."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim

SCENARIO = """\
version: 1
agents:
  boss: {{policy: coordinator}}
  slow: {{policy: {{echo: {{delay: 300}}}}}}
  fast: {{policy: {{echo: {{delay: {fast}}}}}}}
parent: {{agent: boss, background_agents: [slow, fast], wait_timeout: 600}}
steps:
  - run: research
"""


def _render(tmp_path: Path, fast: float, times: str = "delta") -> list[str]:
    path = tmp_path / f"fast_{fast}.loopsim.yaml"
    path.write_text(SCENARIO.format(fast=fast), encoding="utf-8")
    result = loopsim.run_scenario(loopsim.load_scenario(path))
    assert result.passed, result.report()
    assert result.transcript is not None
    return loopsim.render_text(result.transcript, times=times).splitlines()[1:]


def _changed(before: list[str], after: list[str]) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before, after, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_one_delay_changes_only_the_two_clock_jumps_around_it(tmp_path: Path) -> None:
    before = _render(tmp_path, 10)
    after = _render(tmp_path, 11)
    assert _changed(before, after) == [
        "-+10s       clock_jump",
        "++11s       clock_jump",
        "-+290s      clock_jump",
        "++289s      clock_jump",
    ]
    # the same change with absolute times rewrites every line after the first jump
    absolute = _changed(_render(tmp_path, 10, "absolute"), _render(tmp_path, 11, "absolute"))
    assert len(absolute) > 20


@settings(max_examples=8, deadline=None)
@given(st.integers(1, 299), st.integers(1, 299))
def test_only_clock_jump_lines_change_while_the_order_holds(
    tmp_path_factory: pytest.TempPathFactory, first: int, second: int
) -> None:
    folder = tmp_path_factory.mktemp("times")
    before, after = _render(folder, first), _render(folder, second)
    assert len(before) == len(after)
    changed = _changed(before, after)
    assert all(line.endswith("clock_jump") for line in changed), changed
    assert len(changed) == (0 if first == second else 4)


def test_time_column_format() -> None:
    client = loopsim.ScriptedChatClient(
        [loopsim.Turn("a", delay=0.25), loopsim.Turn("b", delay=90)]
    )
    agent = loopsim.Agent(client, name="a")

    async def two() -> None:
        session = agent.create_session()
        await agent.run("one", session=session)
        await agent.run("two", session=session)

    _, transcript = loopsim.record(two, seed=1)
    lines = loopsim.render_text(transcript).splitlines()
    assert lines[0].endswith("events=7 times=since-previous")
    assert [line[:11] for line in lines[1:]] == [
        " " * 11,  # session_created
        " " * 11,  # model_request
        "+0.25s     ",  # clock_jump
        " " * 11,  # model_response
        " " * 11,  # model_request
        "+90s       ",  # clock_jump
        " " * 11,  # model_response
    ]
    absolute = loopsim.render_text(transcript, times="absolute").splitlines()
    assert absolute[6] == "t=   90.250  clock_jump            0.250 -> 90.250"
    assert not absolute[0].endswith("times=since-previous")


def test_unknown_times_value_is_a_clear_error() -> None:
    _, transcript = loopsim.record(
        loopsim.Agent(loopsim.ScriptedChatClient(["hi"]), name="a").run, "x"
    )
    with pytest.raises(ValueError, match="times must be 'delta' or 'absolute', got 'wall'"):
        loopsim.render_text(transcript, times="wall")


def test_the_docs_diff_is_what_a_one_second_change_does(tmp_path: Path) -> None:
    docs = (Path(__file__).parent.parent / "docs" / "scenarios.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```diff\n(.*?)```", docs, flags=re.DOTALL)
    shown = block.splitlines()
    scenarios = Path(__file__).parent.parent / "scenarios"
    snapshot = (scenarios / "__snapshots__" / "background_fast_first.transcript.txt").read_text(
        encoding="utf-8"
    )
    text = (scenarios / "background_fast_first.loopsim.yaml").read_text(encoding="utf-8")
    path = tmp_path / "background_fast_first.loopsim.yaml"
    path.write_text(text.replace("delay: 10}", "delay: 11}"), encoding="utf-8")
    result = loopsim.run_scenario(loopsim.load_scenario(path))
    assert result.transcript is not None
    after = loopsim.render_text(result.transcript).splitlines()
    before = snapshot.splitlines()
    assert shown[0] == " " + before[0]
    changed = _changed(before, after)
    assert [line for line in shown if line[:1] in "+-"] == changed
    for line in shown:  # every context line of the example is a line of the snapshot
        if line[:1] == " " and line.strip() != "...":
            assert line[1:] in before


def test_show_absolute_times(capsys: pytest.CaptureFixture[str]) -> None:
    from loopsim.cli import main

    path = Path(__file__).parent / "data" / "transcripts" / "loop_background.transcript.json"
    assert main(["show", str(path)]) == 0
    relative = capsys.readouterr().out.splitlines()
    assert main(["show", str(path), "--absolute-times", "--max-events", "30"]) == 0
    absolute = capsys.readouterr().out.splitlines()
    assert "+30s       clock_jump" in relative
    assert "t=   30.000  clock_jump            0.000 -> 30.000" in absolute
    assert absolute[-1] == "# ... 10 more event(s) not shown (--max-events 30)"
    assert all(line.startswith(("t=", "#")) for line in absolute)
