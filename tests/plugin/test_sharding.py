"""Sharding across CI machines with pytest-split (stored durations): two shards of a
scenario suite run every scenario exactly once, through pytest and through `loopsim run`."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCENARIOS = Path(__file__).parent.parent.parent / "scenarios"
NAMES = [f"s{n}" for n in range(1, 8)]

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pytest_split") is None,
    reason="pytest-split is not installed (it comes with pytest-loopsim[shard] and pytest-loopsim[dev])",
)


def _suite(pytester: pytest.Pytester) -> list[str]:
    text = (SCENARIOS / "max_iterations_cap.loopsim.yaml").read_text(encoding="utf-8")
    for name in NAMES:
        (pytester.path / f"{name}.loopsim.yaml").write_text(text, encoding="utf-8")
    return [f"{name}.loopsim.yaml::{name}" for name in NAMES]


def _ran(reprec: pytest.HookRecorder) -> list[str]:
    return [r.nodeid for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"]


def _shards(pytester: pytest.Pytester, *options: str) -> list[list[str]]:
    shards = []
    for group in ("1", "2"):
        reprec = pytester.inline_run("--splits", "2", "--group", group, *options)
        reprec.assertoutcome(passed=len(_ran(reprec)))
        shards.append(_ran(reprec))
    return shards


def test_stored_durations_then_two_shards_cover_the_suite_once(pytester: pytest.Pytester) -> None:
    everything = _suite(pytester)
    durations = pytester.path / "durations.json"
    stored = pytester.inline_run("--store-durations", f"--durations-path={durations}")
    stored.assertoutcome(passed=len(NAMES))
    assert set(json.loads(durations.read_text(encoding="utf-8"))) == set(everything)
    for algorithm in ("least_duration", "duration_based_chunks"):
        first, second = _shards(
            pytester, f"--durations-path={durations}", f"--splitting-algorithm={algorithm}"
        )
        assert first
        assert second
        assert not set(first) & set(second)
        assert sorted(first + second) == sorted(everything)


def test_the_shards_follow_the_stored_durations(pytester: pytest.Pytester) -> None:
    everything = _suite(pytester)
    durations = pytester.path / "durations.json"
    times = dict.fromkeys(everything, 1.0)
    times["s4.loopsim.yaml::s4"] = 100.0  # one slow scenario gets a shard to itself
    durations.write_text(json.dumps(times), encoding="utf-8")
    shards = _shards(
        pytester, f"--durations-path={durations}", "--splitting-algorithm=least_duration"
    )
    assert ["s4.loopsim.yaml::s4"] in shards
    assert sorted(shards[0] + shards[1]) == sorted(everything)


def test_loopsim_run_passes_the_split_options_on(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    counts = []
    for group in ("1", "2"):
        result = pytester.run(
            sys.executable,
            "-m",
            "loopsim",
            "run",
            ".",
            "--splits",
            "2",
            "--group",
            group,
            "-p",
            "no:cacheprovider",
        )
        assert result.ret == 0, result.stdout.str()
        line = result.stdout.lines[-1]
        assert line.startswith("loopsim: ")
        counts.append(int(line.split()[1]))
    assert sorted(counts) == [3, 4]


def test_the_docs_ci_matrix_runs_every_scenario_once(pytester: pytest.Pytester) -> None:
    import re
    import shlex

    import yaml

    docs = (SCENARIOS.parent / "docs" / "scenarios.md").read_text(encoding="utf-8")
    (workflow,) = [b for b in re.findall(r"```yaml\n(.*?)```", docs, re.DOTALL) if "--splits" in b]
    job = yaml.safe_load(workflow)["jobs"]["scenarios"]
    groups = job["strategy"]["matrix"]["group"]
    (command,) = [s["run"] for s in job["steps"] if "loopsim run" in s.get("run", "")]
    args = shlex.split(command)
    assert args[:3] == ["loopsim", "run", "scenarios/"]
    assert groups == list(range(1, int(args[args.index("--splits") + 1]) + 1))
    everything = _suite(pytester)
    ran: list[str] = []
    for group in groups:
        options = shlex.split(command.replace("${{ matrix.group }}", str(group)))[3:]
        options = [a for a in options if a not in ("-n", "auto")]  # xdist is tested elsewhere
        reprec = pytester.inline_run(*options)
        ran.extend(_ran(reprec))
        assert (pytester.path / f"report-{group}.xml").is_file()
    assert sorted(ran) == sorted(everything)
