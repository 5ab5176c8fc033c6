"""One update flag: ``--snapshot-update`` writes scenario snapshots; with syrupy installed
it is syrupy's own flag and updates both kinds in one run. ``--loopsim-update-snapshots``
still works and says once that it is deprecated (a note, not a Python warning)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

SCENARIOS = Path(__file__).parent.parent.parent / "scenarios"
NOTE = "loopsim: note: --loopsim-update-snapshots is deprecated and will go away; use --snapshot-update"

pytest_plugins = ["pytester"]

needs_syrupy = pytest.mark.skipif(
    importlib.util.find_spec("syrupy") is None,
    reason="syrupy is not installed (it comes with pytest-loopsim[test] and pytest-loopsim[dev])",
)


@pytest.fixture
def snapshot_file(pytester: pytest.Pytester) -> Path:
    text = (SCENARIOS / "completion_marker.loopsim.yaml").read_text(encoding="utf-8")
    (pytester.path / "completion_marker.loopsim.yaml").write_text(text, encoding="utf-8")
    return pytester.path / "__snapshots__" / "completion_marker.transcript.txt"


def _shipped() -> str:
    path = SCENARIOS / "__snapshots__" / "completion_marker.transcript.txt"
    return path.read_text(encoding="utf-8")


@needs_syrupy
def test_with_syrupy_one_flag_updates_both(
    pytester: pytest.Pytester, snapshot_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # run as a single process even when this suite runs under xdist: syrupy reads this
    # variable to decide whether it is a worker (a worker leaves the clean-up to others)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_words="def test_words(snapshot):\n    assert 'hello' == snapshot\n")
    result = pytester.runpytest("--snapshot-update", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert snapshot_file.read_text(encoding="utf-8") == _shipped()
    amber = pytester.path / "__snapshots__" / "test_words.ambr"
    assert "hello" in amber.read_text(encoding="utf-8")
    # syrupy's clean-up takes the scenario snapshot in the shared __snapshots__ folder for
    # an unused one of its own and deletes it; loopsim writes it back and says so
    result.stdout.fnmatch_lines(
        ["loopsim: syrupy took 1 scenario snapshot(s) for unused snapshots and deleted them;*"]
    )
    again = pytester.runpytest("--snapshot-update", "-p", "no:cacheprovider", "-n", "2")
    again.assert_outcomes(passed=2)
    assert snapshot_file.read_text(encoding="utf-8") == _shipped()
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


@needs_syrupy
def test_with_syrupy_help_lists_the_flag_once(pytester: pytest.Pytester) -> None:
    text = pytester.runpytest("--help").stdout.str()
    assert len(re.findall(r"^  --snapshot-update\s", text, flags=re.MULTILINE)) == 1


def test_without_syrupy_loopsim_brings_the_flag(
    pytester: pytest.Pytester, snapshot_file: Path
) -> None:
    result = pytester.runpytest("-p", "no:syrupy", "--snapshot-update")
    result.assert_outcomes(passed=1)
    assert snapshot_file.read_text(encoding="utf-8") == _shipped()
    pytester.runpytest("-p", "no:syrupy").assert_outcomes(passed=1)
    help_text = pytester.runpytest("-p", "no:syrupy", "--help").stdout.str()
    loopsim_group = help_text.split("loopsim scenarios and virtual time:")[1]
    assert re.search(r"^  --snapshot-update\s", loopsim_group, flags=re.MULTILINE)


def test_no_flag_writes_nothing(pytester: pytest.Pytester, snapshot_file: Path) -> None:
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    assert not snapshot_file.exists()
    assert NOTE not in result.stdout.str()


@pytest.mark.parametrize(
    "options", [(), ("-n", "2"), ("-p", "no:syrupy")], ids=["one", "xdist", "no-syrupy"]
)
def test_the_old_flag_still_updates_and_says_once_it_is_deprecated(
    pytester: pytest.Pytester, snapshot_file: Path, options: tuple[str, ...]
) -> None:
    result = pytester.runpytest("-W", "error", "--loopsim-update-snapshots", *options)
    result.assert_outcomes(passed=1)
    assert snapshot_file.read_text(encoding="utf-8") == _shipped()
    assert result.stdout.str().count(NOTE) == 1
    assert "warnings summary" not in result.stdout.str()
