"""Every shipped scenario, recorded and then replayed from its transcript, is identical.

The replay run gives each agent a strict ``ReplayChatClient`` over the recording in
place of its scripted model, on both backends; the transcripts must match byte for byte
and every recorded turn must be played.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import loopsim
from loopsim._scenario import BACKENDS, Backend

SCENARIOS = sorted((Path(__file__).parent.parent / "scenarios").glob("*.loopsim.yaml"))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name.split(".")[0] for p in SCENARIOS])
def test_record_then_replay_is_identical(path: Path, backend: Backend) -> None:
    loaded = loopsim.load_scenario(path)
    recorded = loopsim.run_scenario(loaded, backend=backend)
    assert recorded.passed, recorded.report(tail=0)
    assert recorded.transcript is not None
    replays: list[loopsim.ReplayChatClient] = []

    def from_recording(name: str, _scripted: loopsim.ChatClient) -> loopsim.ChatClient:
        assert recorded.transcript is not None
        replays.append(loopsim.ReplayChatClient(recorded.transcript, name))
        return replays[-1]

    replayed = loopsim.run_scenario(loaded, backend=backend, models=from_recording)
    assert replayed.passed, replayed.report(tail=0)
    assert replayed.transcript is not None
    assert replayed.transcript.to_json() == recorded.transcript.to_json()
    assert all(not r.unplayed for r in replays)


def test_a_changed_program_is_caught_at_the_divergent_request(tmp_path: Path) -> None:
    path = Path(__file__).parent.parent / "scenarios" / "completion_marker.loopsim.yaml"
    loaded = loopsim.load_scenario(path)
    recorded = loopsim.run_scenario(loaded).transcript
    assert recorded is not None
    # The same models, but the loop now sends different feedback: the writer's second
    # request differs from the recorded one.
    changed = tmp_path / "changed.loopsim.yaml"
    changed.write_text(
        path.read_text(encoding="utf-8").replace(
            "- completion_marker: DONE",
            '- completion_marker: {marker: DONE, feedback_message_template: "more"}',
        ),
        encoding="utf-8",
    )
    result = loopsim.run_scenario(
        loopsim.load_scenario(changed),
        models=lambda name, _c: loopsim.ReplayChatClient(recorded, name),
    )
    assert isinstance(result.error, loopsim.ReplayMismatchError)
    assert result.error.agent == "writer"
    assert "more" in result.error.actual
