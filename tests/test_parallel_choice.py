"""``loopsim run -n N`` runs a small suite of plain scenarios serially and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from _cli import loopsim_cli

from loopsim._parallel import PARALLEL_MIN_FILES, serial_when_small

PLAIN = (
    "version: 1\n"
    "agents:\n  writer: {script: [done]}\n"
    "parent: {agent: writer}\n"
    "steps: [{run: go}]\n"
    "expect: {response: {contains: done}}\n"
)
VARY = (Path(__file__).parents[1] / "scenarios" / "vary_coordinator_delays.loopsim.yaml").read_text(
    encoding="utf-8"
)


def suite(folder: Path, count: int) -> Path:
    for n in range(count):
        (folder / f"s{n}.loopsim.yaml").write_text(PLAIN, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "workers",
    [["-n", "2"], ["-n2"], ["-nauto"], ["--numprocesses", "auto"], ["--numprocesses=2"]],
    ids=" ".join,
)
def test_every_spelling_of_n_is_dropped_on_a_small_suite(
    tmp_path: Path, workers: list[str]
) -> None:
    folder = suite(tmp_path, 3)
    arguments, said = serial_when_small([str(folder), "-q", *workers, "-k", "s1"])
    assert arguments == [str(folder), "-q", "-k", "s1"]
    assert said is not None
    assert "3 scenario files" in said
    assert "running serially" in said
    assert "--parallel keeps -n" in said


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        (["-q"], "no -n"),
        (["-n", "0"], "-n 0 is serial already"),
        (["-n", "2", "--parallel"], "asked to keep it"),
    ],
)
def test_n_is_kept_when_asked_or_absent(tmp_path: Path, arguments: list[str], why: str) -> None:
    folder = suite(tmp_path, 3)
    out, said = serial_when_small([str(folder), *arguments])
    assert said is None, why
    assert out == [str(folder), *(a for a in arguments if a != "--parallel")]


def test_a_suite_with_vary_or_python_tests_or_many_files_keeps_its_workers(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    folder = suite(tmp_path / "plain", 2)
    (folder / "vary.loopsim.yaml").write_text(VARY, encoding="utf-8")
    assert serial_when_small([str(folder), "-n", "2"])[1] is None
    (folder / "vary.loopsim.yaml").unlink()
    (folder / "test_x.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    assert serial_when_small([str(folder), "-n", "2"])[1] is None
    (folder / "test_x.py").unlink()
    assert serial_when_small([str(folder), "-n", "2"])[1] is not None
    big = tmp_path / "big"
    big.mkdir()
    for n in range(PARALLEL_MIN_FILES):
        (big / f"s{n}.loopsim.yaml").touch()
    assert serial_when_small([str(big), "-n", "2"])[1] is None


def test_loopsim_run_says_it_runs_serially_and_does(tmp_path: Path) -> None:
    folder = suite(tmp_path, 3)
    done = loopsim_cli("run", str(folder), "-n", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "running serially, as -n 2 would be slower" in done.stderr
    assert "workers" not in done.stdout  # xdist never started
    assert "loopsim: 3 scenarios: 3 passed" in done.stdout
    kept = loopsim_cli("run", str(folder), "-n", "2", "--parallel", cwd=tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "running serially" not in kept.stderr
    assert "2 workers" in kept.stdout
