"""Flat memory across runs on the agent_framework engine (issue 26, item 8).

agent_framework made new OpenTelemetry histograms for each chat client and function tool
it built; with no meter provider set, OpenTelemetry's proxy provider keeps every meter
and instrument handed out, so each run left about 18 behind for the life of the process
(93 -> 186 MB over 2,000 runs). The benchmark row is ``benchmarks/bench_memory.py``;
here the objects themselves are counted.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

pytest.importorskip("agent_framework")

from opentelemetry import metrics

from loopsim._scenario import load_scenario, run_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "background_fast_first.loopsim.yaml"


def otel_objects() -> int:
    """Meters and instruments alive in the process (OpenTelemetry's API objects)."""
    gc.collect()
    return sum(
        1
        for obj in gc.get_objects()
        if str(getattr(type(obj), "__module__", "")).startswith("opentelemetry.metrics")
        and ("Meter" in type(obj).__name__ or "Histogram" in type(obj).__name__)
    )


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
def test_runs_leave_no_meters_or_instruments_behind(engine: str) -> None:
    loaded = load_scenario(SCENARIO)
    for _ in range(3):  # warm up: the first run makes what is shared
        assert run_scenario(loaded, engine=engine).passed
    before = otel_objects()

    for _ in range(20):
        assert run_scenario(loaded, engine=engine).passed

    assert otel_objects() == before


def test_instruments_are_shared_per_provider_not_across_providers() -> None:
    from agent_framework import observability

    import loopsim.agent_framework  # noqa: F401 - installs the sharing

    first = observability._get_duration_histogram()
    assert observability._get_duration_histogram() is first
    assert observability._get_token_usage_histogram() is not first
    assert metrics.get_meter_provider() is not None
