"""The pytest plugin: scenario items, failure reports, options, xdist and JUnit XML."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent
SCENARIOS = ROOT / "scenarios"
CORPUS = ROOT / "tests" / "data" / "invalid_scenarios"

pytest_plugins = ["pytester"]


def _copy(pytester: pytest.Pytester, name: str, text: str) -> Path:
    path = pytester.path / name
    path.write_text(text, encoding="utf-8")
    return path


def _shipped(name: str) -> str:
    return (SCENARIOS / name).read_text(encoding="utf-8")


def test_scenario_file_is_one_passing_item(pytester: pytest.Pytester) -> None:
    _copy(pytester, "cap.loopsim.yaml", _shipped("max_iterations_cap.loopsim.yaml"))
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*cap.loopsim.yaml::cap PASSED*"])


def test_failure_names_line_seed_and_tail(pytester: pytest.Pytester) -> None:
    text = _shipped("max_iterations_cap.loopsim.yaml").replace("iterations: 3", "iterations: 4")
    _copy(pytester, "cap.loopsim.yaml", text)
    result = pytester.runpytest("--loopsim-seed=7")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cap.loopsim.yaml:14: expect.iterations: expected 4 iteration(s), got 3*",
            "*seed 7*",
            "*last 12 events:*",
            "*reproduce: loopsim run*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_invalid_file_is_failing_item_without_traceback(pytester: pytest.Pytester) -> None:
    _copy(pytester, "broken.loopsim.yaml", (CORPUS / "delay_not_a_number.yaml").read_text())
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    assert (
        'broken.loopsim.yaml:8: agents.web_search.script[2].delay: expected a number >= 0, got "soon"'
        in result.stdout.str()
    )
    assert "Traceback" not in result.stdout.str()
    assert "pydantic" not in result.stdout.str()


def test_transcripts_option_writes_files(pytester: pytest.Pytester, tmp_path: Path) -> None:
    _copy(pytester, "cap.loopsim.yaml", _shipped("max_iterations_cap.loopsim.yaml"))
    out = tmp_path / "transcripts"
    result = pytester.runpytest(f"--loopsim-transcripts={out}")
    result.assert_outcomes(passed=1)
    assert (out / "cap.transcript.json").exists()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_backend_option(pytester: pytest.Pytester, backend: str) -> None:
    # this scenario compares its transcript with a snapshot: it must hold on both backends
    name = "background_fast_first"
    _copy(pytester, f"{name}.loopsim.yaml", _shipped(f"{name}.loopsim.yaml"))
    (pytester.path / "__snapshots__").mkdir()
    snapshot = f"__snapshots__/{name}.transcript.txt"
    _copy(pytester, snapshot, _shipped(snapshot))
    result = pytester.runpytest(f"--loopsim-backend={backend}")
    result.assert_outcomes(passed=1)


def test_marker_runs_async_test_on_virtual_clock(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import anyio, pytest

        @pytest.mark.loopsim(backend=("asyncio", "trio"))
        async def test_hour(loopsim_clock):
            await anyio.sleep(3600)

        @pytest.mark.loopsim
        async def test_elapsed(loopsim_clock):
            await anyio.sleep(5)
            assert loopsim_clock.elapsed == 5
        """
    )
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=2)


def test_entry_point_xdist_and_junit_in_subprocess(pytester: pytest.Pytester) -> None:
    # No -p: the plugin must come from the installed pytest11 entry point.
    _copy(pytester, "a.loopsim.yaml", _shipped("max_iterations_cap.loopsim.yaml"))
    _copy(pytester, "b.loopsim.yaml", _shipped("background_in_start_order.loopsim.yaml"))
    broken = (CORPUS / "negative_delay.yaml").read_text()
    _copy(pytester, "c.loopsim.yaml", broken)
    result = pytester.runpytest_subprocess("-n", "2", "--junit-xml=report.xml")
    result.assert_outcomes(passed=2, failed=1)
    xml = (pytester.path / "report.xml").read_text(encoding="utf-8")
    assert 'tests="3"' in xml
    assert "agents.writer.script[0].delay: expected a number &gt;= 0, got -5" in xml
