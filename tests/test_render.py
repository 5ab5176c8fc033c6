"""Exact renderings of the fixed transcript in tests/data/transcripts/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import loopsim

DATA = Path(__file__).parent / "data" / "transcripts"
TRANSCRIPT = loopsim.read_transcript(DATA / "loop_background.transcript.json")


@pytest.mark.parametrize(
    ("render", "expected"),
    [
        pytest.param(loopsim.render_text, "loop_background.txt", id="text"),
        pytest.param(loopsim.render_mermaid, "loop_background.mmd", id="mermaid"),
        pytest.param(loopsim.render_timeline, "loop_background.timeline.mmd", id="timeline"),
    ],
)
def test_renderings_are_exact(render: object, expected: str) -> None:
    assert callable(render)
    assert render(TRANSCRIPT) == (DATA / expected).read_text(encoding="utf-8")


def test_text_shows_only_the_new_tail_of_each_request() -> None:
    lines = loopsim.render_text(TRANSCRIPT).splitlines()
    second = [line for line in lines if "model_request" in line and "parent" in line][1]
    assert second.endswith(
        "tool: result #c1 = \"Started background task 1 on agent 'web'.\" (+2 earlier)"
    )
    assert "tools:" not in second  # listed only when they change
    # every event line starts with its time column: blank, or the seconds that passed
    assert all(re.match(r"(# |\+[0-9.]+s +|           )[a-z_]+", line) for line in lines)


def test_text_can_clip_long_texts() -> None:
    text = loopsim.render_text(TRANSCRIPT, max_text=20)
    assert '"This is not fini...' in text


def test_mermaid_has_every_participant_and_escapes_text() -> None:
    diagram = loopsim.render_mermaid(TRANSCRIPT)
    assert diagram.splitlines()[:8] == [
        "sequenceDiagram",
        "    actor caller",
        "    participant L1 as loop parent",
        "    participant A1 as parent",
        "    participant P1 as background_agents",
        "    participant A2 as web",
        "    participant A3 as notes",
        "    participant E1 as CompletionMarkerLoopEvaluator",
    ]
    events = [
        loopsim.TranscriptEvent(
            seq=1,
            time=0,
            kind="model_response",
            data={
                "agent": "a",
                "session": "s",
                "messages": [
                    {"role": "assistant", "contents": [{"type": "text", "text": "x; y #1 <b>\nz"}]}
                ],
            },
        ),
        loopsim.TranscriptEvent(seq=2, time=1, kind="process_restart", data={}),
    ]
    text = loopsim.render_mermaid(loopsim.Transcript(events=events))
    assert 'A1-->>caller: t=0 "x#59; y #35;1 #lt;b#gt; z"' in text
    assert "\\n" not in text
    assert "Note over caller,A1: t=1 process restart" in text


def test_timeline_marks_unfinished_and_failed_tasks() -> None:
    def status(seq: int, time: float, task: int, value: str) -> loopsim.TranscriptEvent:
        return loopsim.TranscriptEvent(
            seq=seq,
            time=time,
            kind="task_status",
            data={
                "provider": "p",
                "session": "s",
                "task_id": task,
                "agent": "child",
                "description": "d: x",
                "status": value,
                "result": None,
                "error": None,
            },
        )

    transcript = loopsim.Transcript(
        events=[
            status(1, 0, 1, "running"),
            status(2, 1.5, 2, "running"),
            status(3, 2.25, 2, "failed"),
            status(4, 10, 3, "running"),
        ]
    )
    assert loopsim.render_timeline(transcript).splitlines()[5:] == [
        "    section child",
        "    task 1 running - d x : active, running_t1_1, 0, 10000",
        "    task 2 failed - d x : crit, failed_t2_1, 1500, 2250",
        "    task 3 running - d x : milestone, active, running_t3_1, 10000, 10000",
    ]


def test_a_failed_model_call_is_drawn() -> None:
    transcript = loopsim.Transcript(
        events=[
            loopsim.TranscriptEvent(
                seq=1,
                time=4.0,
                kind="model_error",
                data={
                    "agent": "flaky",
                    "session": "session-0002",
                    "error": "ConnectionError",
                    "message": "model overloaded",
                },
            )
        ]
    )
    assert (
        'model_error           flaky  session-0002  ConnectionError: "model overloaded"'
        in loopsim.render_text(transcript)
    )
    assert "Note over A1: t=4 ConnectionError: model overloaded" in loopsim.render_mermaid(
        transcript
    )
