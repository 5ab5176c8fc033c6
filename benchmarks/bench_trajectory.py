"""Trajectory checking: what stating a run's steps costs, against the same run without.

Two shipped scenarios, each run through the scenario runner as shipped (with their
``trajectory:`` / ``trajectories:`` / ``never:`` expectations) and with those keys taken
out: ``research_coordinator`` (a 40-iteration background loop, about 200 steps, a
per-iteration trajectory) and ``background_fast_first`` (about 20 steps, one in_order
trajectory with time windows). The two runs of a case are measured in paired rounds
(CPU time, alternating order); the row is the median of the per-round ratios, with its
bootstrap interval and both medians in the note. A third row times the check alone
(events -> steps -> both trajectories) on the larger run.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml

try:
    from _common import Row, interleaved, interval_note, median, median_time, paired_ratio
except ImportError:  # pragma: no cover
    from benchmarks._common import (
        Row,
        interleaved,
        interval_note,
        median,
        median_time,
        paired_ratio,
    )

from loopsim._scenario import load_scenario, load_scenario_text, run_scenario
from loopsim._trajectory import check_trajectory, trajectory_of

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
CASES = ("research_coordinator", "background_fast_first")
KEYS = ("trajectory", "trajectories", "never")
OVERHEAD_TARGET = 1.10  # a run with its trajectories checked costs < 10 % more


def _without_trajectories(path: Path) -> str:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key in KEYS:
        data["expect"].pop(key, None)
    return yaml.safe_dump(data, sort_keys=False)


def run(repeat: int = 7, log: Callable[[str], None] = print) -> list[Row]:
    rows: list[Row] = []
    for name in CASES:
        path = SCENARIOS / f"{name}.loopsim.yaml"
        shipped = load_scenario(path)
        bare = load_scenario_text(_without_trajectories(path), path=str(path))
        assert run_scenario(shipped).passed, f"{name} must pass as shipped"
        steps = len(trajectory_of(run_scenario(shipped).events))
        timed, plain = interleaved(
            [
                lambda loaded=shipped: run_scenario(loaded),
                lambda loaded=bare: run_scenario(loaded),
            ],
            repeat,
        )
        ratio, low, high = paired_ratio(timed, plain)
        with_check, without = median(timed), median(plain)
        rows.append(
            Row(
                section="trajectory",
                case=f"{name} ({steps} steps): run with trajectories / without",
                value=ratio,
                unit="x CPU",
                target=f"< {OVERHEAD_TARGET:g}x",
                met=ratio < OVERHEAD_TARGET,
                note=f"{interval_note(low, high, repeat)}; with {with_check * 1000:.2f} ms, "
                f"without {without * 1000:.2f} ms",
                extra={"with_ms": with_check * 1000, "without_ms": without * 1000},
            )
        )
        log(f"{rows[-1].case}: x{ratio:.2f} ({with_check * 1000:.2f} vs {without * 1000:.2f} ms)")
    loaded = load_scenario(SCENARIOS / f"{CASES[0]}.loopsim.yaml")
    result = run_scenario(loaded)
    expect = loaded.scenario.expect
    assert expect is not None
    specs = [t.trajectory() for t in (expect.trajectory, *(expect.trajectories or ())) if t]

    def check() -> None:
        steps = trajectory_of(result.events, result.host_steps)
        for spec in specs:
            assert not check_trajectory(spec, steps)

    alone = median_time(check, repeat * 3)
    rows.append(
        Row(
            section="trajectory",
            case=f"check alone: {CASES[0]}, {len(result.events)} events, {len(specs)} trajectories",
            value=alone * 1000,
            unit="ms",
        )
    )
    log(f"{rows[-1].case}: {alone * 1000:.3f} ms")
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    for row in run(repeat=args.repeat):
        print(row)


if __name__ == "__main__":
    main()
