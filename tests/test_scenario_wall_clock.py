"""A scenario with ``wall_clock: true`` lets the code under test read virtual wall time."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import loopsim

EVALUATOR = '''
import datetime

from loopsim import LoopEvaluation, LoopEvaluator


class StampEvaluator(LoopEvaluator):
    """Continues once, with the wall-clock time it saw as feedback."""

    async def evaluate(self, context):
        if context.iteration == 1:
            now = datetime.datetime.now(datetime.timezone.utc)
            return LoopEvaluation.continue_with_feedback(now.isoformat())
        return LoopEvaluation.stop()
'''

SCENARIO = """\
version: 1
wall_clock: {wall_clock}
agents:
  writer:
    script:
      - {{reply: first, delay: 30}}
      - {{reply: second, delay: 30}}
parent: {{agent: writer}}
loop:
  evaluators: ["wallclock_stamp:StampEvaluator"]
steps:
  - run: go
expect:
  iterations: 2
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("wall_clock", [True, False], ids=["virtual-wall-clock", "real"])
def test_wall_clock_follows_the_virtual_clock_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, wall_clock: bool
) -> None:
    (tmp_path / "wallclock_stamp.py").write_text(textwrap.dedent(EVALUATOR), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "stamp.loopsim.yaml"
    path.write_text(SCENARIO.format(wall_clock=str(wall_clock).lower()), encoding="utf-8")
    result = loopsim.run_scenario(loopsim.load_scenario(path), backend=backend)  # type: ignore[arg-type]
    assert result.passed, result.report()
    (decision,) = [
        e for e in result.events if e.kind == "evaluator_decision" and e.data["iteration"] == 1
    ]
    seen = decision.data["feedback"]
    if wall_clock:
        assert seen == "2026-01-01T00:00:30+00:00"
    else:
        assert not seen.startswith("2026-01-01T00:00:30")
