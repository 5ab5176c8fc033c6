"""Every shipped scenario, run twice on asyncio and twice on trio, records the same transcript.

Runs on one backend must be byte-identical; across backends only the header's ``backend``
field may differ (it names the backend), every event must be the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loopsim._scenario import BACKENDS, Backend, load_scenario, run_scenario
from loopsim._transcript import Transcript

SCENARIOS = sorted((Path(__file__).parent.parent / "scenarios").glob("*.loopsim.yaml"))


def _transcript(path: Path, backend: Backend) -> Transcript:
    result = run_scenario(load_scenario(path), backend=backend)
    assert result.passed, result.report(tail=0)
    assert result.transcript is not None
    assert result.transcript.backend == backend
    return result.transcript


def test_every_scenario_is_checked() -> None:
    assert len(SCENARIOS) >= 20


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name.split(".")[0] for p in SCENARIOS])
def test_transcripts_are_byte_identical(path: Path) -> None:
    runs = {
        backend: [_transcript(path, backend).to_json() for _ in range(2)] for backend in BACKENDS
    }
    for backend, (first, second) in runs.items():
        assert first == second, f"two {backend} runs of {path.name} recorded different transcripts"
    asyncio_text = runs["asyncio"][0]
    trio_text = runs["trio"][0].replace('"backend": "trio"', '"backend": "asyncio"', 1)
    assert asyncio_text == trio_text, f"{path.name}: asyncio and trio recorded different events"
