"""The Mermaid renderings line by line (the browser tests check how Mermaid draws them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import loopsim
from loopsim._scenario import run_scenario

ROOT = Path(__file__).parent.parent
SCENARIOS = ROOT / "scenarios"


def _run(name: str) -> loopsim.Transcript:
    result = run_scenario(loopsim.load_scenario(SCENARIOS / f"{name}.loopsim.yaml"))
    assert result.transcript is not None
    return result.transcript


def _status(seq: int, time: float, task: int, value: str, **extra: Any) -> loopsim.TranscriptEvent:
    return loopsim.TranscriptEvent(
        seq=seq,
        time=time,
        kind="task_status",
        data={
            "provider": "p",
            "session": "s",
            "task_id": task,
            "agent": "child",
            "description": "d",
            "status": value,
            **extra,
        },
    )


def test_restart_draws_both_host_calls_and_the_provider_reports_lost_and_cleared() -> None:
    lines = loopsim.render_mermaid(_run("restart_lost_recovery")).splitlines()
    assert '    caller->>A1: t=0 run "start the work"' in lines
    assert '    caller->>A1: t=10 run "collect"' in lines
    restart = lines.index("    Note over caller,A2: t=10 process restart")
    assert lines.index('    caller->>A1: t=10 run "collect"') > restart
    assert "    P1--xA1: t=10 task 1 lost" in lines
    assert "    P1--)A1: t=10 task 1 cleared" in lines
    assert not [line for line in lines if re.match(r"\s+A2-.*(lost|cleared)", line)]
    assert '    A2--)P1: t=110 task 2 completed "echo: collect"' in lines


def test_a_timed_out_wait_is_a_crossed_arrow_and_repeats_fold() -> None:
    transcript = _run("wait_timeout")
    folded = loopsim.render_mermaid(transcript).splitlines()
    assert "    A1->>P1: t=0..120 wait_for_first_completion(task_ids=[1]) x2" in folded
    assert any(line.startswith("    P1--xA1: t=0..120 timed out 2 times: ") for line in folded)
    unfolded = loopsim.render_mermaid(transcript, fold=False).splitlines()
    crossed = [line for line in unfolded if line.startswith("    P1--xA1: ")]
    assert [line.split(" timed out")[0] for line in crossed] == [
        "    P1--xA1: t=60",
        "    P1--xA1: t=120",
    ]


@pytest.mark.parametrize(("approved", "answer"), [(True, "approved"), (False, "rejected")])
def test_every_host_call_of_a_multi_step_scenario_is_drawn_with_its_input(
    tmp_path: Path, approved: bool, answer: str
) -> None:
    # the approval answer reaches the model as its call's result (agent_framework's
    # shape): the second run is drawn with the answer read from that result
    text = (SCENARIOS / "approval_stop.loopsim.yaml").read_text(encoding="utf-8")
    text = text.replace("approve: true", f"approve: {str(approved).lower()}")
    (tmp_path / "approval.loopsim.yaml").write_text(text.split("expect:")[0], encoding="utf-8")
    result = run_scenario(loopsim.load_scenario(tmp_path / "approval.loopsim.yaml"))
    assert result.transcript is not None
    lines = loopsim.render_mermaid(result.transcript).splitlines()
    runs = [line for line in lines if line.startswith("    caller->>")]
    assert runs == [
        '    caller->>L1: t=0 run "clean up"',
        f'    caller->>L1: t=0 run "{answer} delete_file #35;ops-t1-c1"',
    ]
    assert lines.count("    L1->>A1: t=0 iteration 1") == 2


def test_notes_break_lines_without_a_literal_backslash_n() -> None:
    events = [
        loopsim.TranscriptEvent(
            seq=1,
            time=2,
            kind="model_error",
            data={"agent": "a", "session": "s", "error": "E", "message": "one\ntwo\nthree\nfour"},
        )
    ]
    text = loopsim.render_mermaid(loopsim.Transcript(events=events))
    assert "Note over A1: t=2 E: one<br/>two<br/>three<br/>... 1 more line(s)" in text
    assert "\\n" not in text


def test_max_events_stops_drawing_and_says_how_many_were_left_out() -> None:
    transcript = _run("restart_lost_recovery")
    total = len(transcript.events)
    text = loopsim.render_mermaid(transcript, max_events=10)
    assert text.endswith(f"Note over caller,A2: {total - 10} more event(s) not drawn (max 10)\n")
    assert "t=110" not in text


def test_timeline_keeps_the_last_real_status_and_draws_restarts_and_continued_runs() -> None:
    restart = loopsim.TranscriptEvent(seq=3, time=4, kind="process_restart", data={})
    transcript = loopsim.Transcript(
        events=[
            _status(1, 0, 1, "running"),
            _status(2, 1, 2, "running"),
            restart,
            _status(4, 4, 1, "lost"),
            _status(5, 4, 1, "cleared"),
            _status(6, 6, 2, "completed", result="r"),
            _status(7, 7, 2, "running"),
            _status(8, 9.5, 2, "completed", result="r2"),
        ]
    )
    lines = loopsim.render_timeline(transcript).splitlines()
    assert lines[5:] == [
        "    section child",
        "    task 1 lost - d : crit, done, lost_t1_1, 0, 4000",
        "    task 2 completed - d : done, completed_t2_1, 1000, 6000",
        "    task 2 completed (continued) - d : done, completed_t2_2, 7000, 9500",
        "    process restart : vert, restart_1, 4000, 4000",
    ]


def test_iterations_after_a_restart_are_a_second_run() -> None:
    def start(seq: int, time: float, n: int) -> loopsim.TranscriptEvent:
        return loopsim.TranscriptEvent(
            seq=seq, time=time, kind="loop_iteration_start", data={"loop": "L", "iteration": n}
        )

    transcript = loopsim.Transcript(
        events=[
            start(1, 0, 1),
            start(2, 5, 2),
            loopsim.TranscriptEvent(seq=3, time=8, kind="process_restart", data={}),
            start(4, 8, 1),
            loopsim.TranscriptEvent(
                seq=5, time=9, kind="loop_stop", data={"loop": "L", "reason": "x", "iterations": 1}
            ),
        ]
    )
    assert loopsim.render_timeline(transcript).splitlines()[5:9] == [
        "    section loop L",
        "    iteration 1 (run 1) : iteration_i1_1, 0, 5000",
        "    iteration 2 (run 1) : iteration_i1_2, 5000, 8000",
        "    iteration 1 (run 2) : iteration_i1_3, 8000, 9000",
    ]


@pytest.mark.parametrize(
    "code",
    re.findall(
        r"```python\n(.*?)```", (ROOT / "docs" / "pictures.md").read_text(), flags=re.DOTALL
    ),
)
def test_pictures_doc_examples_run(code: str) -> None:
    exec(compile(code, "docs/pictures.md", "exec"), {"__name__": "pictures"})  # noqa: S102


def test_a_plain_tool_call_is_a_self_arrow_with_its_result() -> None:
    lines = loopsim.render_mermaid(_run("tool_calls")).splitlines()
    assert '    A1->>A1: t=0 add(a=2, b=3) = "5"' in lines  # the text the model read
