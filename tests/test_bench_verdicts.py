"""The benchmark table's verdict history (benchmarks/run.py): a row's yes/NO of the latest
full runs, so that "holds in three consecutive runs" can be read off the table."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _bench_module(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _bench_module("run")


def _row(bench: ModuleType, case: str, met: bool | None) -> object:
    return bench.Row(section="s", case=case, value=1.0, unit="x", met=met)


def _results(path: Path, rows: list[object], *, full: bool = True) -> Path:
    payload = {"machine": {}, "quick": not full, "full": full, "rows": [r.as_dict() for r in rows]}
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_verdicts_accumulate_over_full_runs_and_keep_the_latest_three(
    bench: ModuleType, tmp_path: Path
) -> None:
    results = tmp_path / "results.json"
    runs = [True, False, True, True]
    for met in runs:
        rows = [_row(bench, "flips", met), _row(bench, "steady", True)]
        bench.with_history(rows, results, full=True)
        _results(results, rows)
    flips, steady = rows
    assert flips.extra["verdicts"] == [False, True, True]
    assert steady.extra["verdicts"] == [True, True, True]
    assert bench.unsettled(rows) == [flips]
    cells = bench.table(rows)
    column = cells[0].index("last runs")
    assert [c[column] for c in cells[1:]] == ["NO yes yes", "yes yes yes"]


def test_a_quick_run_neither_reads_nor_starts_a_history(bench: ModuleType, tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    first = [_row(bench, "a", False)]
    bench.with_history(first, results, full=True)
    _results(results, first)
    quick = [_row(bench, "a", True)]
    bench.with_history(quick, results, full=False)
    assert quick[0].extra["verdicts"] == [True]
    _results(results, quick, full=False)
    after = [_row(bench, "a", True)]
    bench.with_history(after, results, full=True)
    assert after[0].extra["verdicts"] == [True]  # the quick file carried nothing over


def test_rows_without_a_target_get_no_history_and_bad_files_start_afresh(
    bench: ModuleType, tmp_path: Path
) -> None:
    broken = tmp_path / "results.json"
    broken.write_text("{not json", encoding="utf-8")
    rows = [_row(bench, "untargeted", None), _row(bench, "targeted", True)]
    bench.with_history(rows, broken, full=True)
    assert "verdicts" not in rows[0].extra
    assert rows[1].extra["verdicts"] == [True]
    assert bench.unsettled(rows) == []


def test_a_results_file_from_before_the_full_key_still_carries_its_history(
    bench: ModuleType, tmp_path: Path
) -> None:
    results = tmp_path / "results.json"
    row = _row(bench, "a", True)
    row.extra["verdicts"] = [False, True]
    payload = {"machine": {}, "quick": False, "rows": [row.as_dict()]}  # no "full" key
    results.write_text(json.dumps(payload), encoding="utf-8")
    now = [_row(bench, "a", True)]
    bench.with_history(now, results, full=True)
    assert now[0].extra["verdicts"] == [False, True, True]


def test_a_run_of_some_sections_never_writes_the_table_nor_the_readme(bench: ModuleType) -> None:
    assert bench.default_output(bench.SECTIONS).name == "results.json"
    assert bench.default_output(["loop", "scale"]).name == "results.partial.json"
    with pytest.raises(SystemExit) as refused:
        bench.main(["--sections", "loop", "--readme"])
    assert refused.value.code == 2
    with pytest.raises(SystemExit) as quick:
        bench.main(["--quick", "--readme"])
    assert quick.value.code == 2
