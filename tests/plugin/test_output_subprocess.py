"""The output options together, in a subprocess with xdist, the plugin from its entry
point and syrupy blocked (as in a plain install, where loopsim registers --snapshot-update):
-v descriptions, the summary, the update flag, the cap, and no progress from workers."""

from __future__ import annotations

from pathlib import Path

import pytest

SCENARIOS = Path(__file__).parent.parent.parent / "scenarios"

pytest_plugins = ["pytester"]


def test_description_summary_update_and_cap_under_xdist(pytester: pytest.Pytester) -> None:
    for name in ("completion_marker", "max_iterations_cap", "vary_coordinator_delays"):
        text = (SCENARIOS / f"{name}.loopsim.yaml").read_text(encoding="utf-8")
        (pytester.path / f"{name}.loopsim.yaml").write_text(text, encoding="utf-8")
    result = pytester.runpytest_subprocess(
        "-n", "2", "-v", "-p", "no:syrupy", "-p", "no:cacheprovider",
        "--snapshot-update", "--loopsim-max-examples=2", "-o", "loopsim_progress_interval=0",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    written = pytester.path / "__snapshots__" / "completion_marker.transcript.txt"
    shipped = SCENARIOS / "__snapshots__" / "completion_marker.transcript.txt"
    assert written.read_text(encoding="utf-8") == shipped.read_text(encoding="utf-8")
    lines = result.stdout.lines
    at = next(i for i, line in enumerate(lines) if "PASSED max_iterations_cap" in line)
    assert lines[at + 1] == (
        "    A loop that never satisfies its evaluator stops at max_iterations."
    )
    start = next(i for i, line in enumerate(lines) if "loopsim: 3 scenarios" in line)
    expected = [
        "passed completion_marker.loopsim.yaml::completion_marker 2 iterations evaluators_stopped 50s virtual",
        "passed max_iterations_cap.loopsim.yaml::max_iterations_cap 3 iterations max_iterations 0s virtual",
        "passed vary_coordinator_delays.loopsim.yaml::vary_coordinator_delays - - 60s virtual vary 2/2 draws",
    ]
    assert [" ".join(line.split()) for line in lines[start + 1 : start + 4]] == expected
    assert "deprecated" not in result.stdout.str()
    # workers print no progress (their output is not shown); the summary counts the draws
    assert not [line for line in lines if line.strip().startswith("vary ")]
