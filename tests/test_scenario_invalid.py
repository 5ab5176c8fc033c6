"""The invalid-scenario corpus: every broken file yields one located ScenarioError.

Each ``tests/data/invalid_scenarios/<case>.yaml|json`` has ``<case>.expected`` holding the
message (file name relative to the corpus). Regenerate after a deliberate wording change
with ``LOOPSIM_UPDATE_SNAPSHOTS=1 pytest tests/test_scenario_invalid.py``.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

import loopsim
from loopsim._scenario import load_scenario

CORPUS = Path(__file__).parent / "data" / "invalid_scenarios"
CASES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".yaml", ".json"))
UPDATE = os.environ.get("LOOPSIM_UPDATE_SNAPSHOTS") == "1"


def _message(error: loopsim.ScenarioError) -> str:
    return str(error).replace(str(CORPUS) + os.sep, "")


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_invalid_file_gives_located_error(case: Path) -> None:
    with pytest.raises(loopsim.ScenarioError) as info:
        load_scenario(case)
    error = info.value
    assert error.path == case
    assert error.line is not None
    assert error.line >= 1
    assert "ValidationError" not in str(error)
    assert "pydantic" not in str(error).lower()
    expected_file = case.with_suffix(".expected")
    if UPDATE:
        expected_file.write_text(_message(error) + "\n", encoding="utf-8")
    assert expected_file.exists(), (
        f"no snapshot for {case.name}: run with LOOPSIM_UPDATE_SNAPSHOTS=1"
    )
    assert _message(error) == expected_file.read_text(encoding="utf-8").rstrip("\n")


@pytest.mark.parametrize("case", CASES[:3], ids=[p.name for p in CASES[:3]])
def test_error_survives_pickling(case: Path) -> None:
    # xdist ships failures between processes
    with pytest.raises(loopsim.ScenarioError) as info:
        load_scenario(case)
    clone = pickle.loads(pickle.dumps(info.value))  # noqa: S301 - our own object, just pickled
    assert (clone.path, clone.line, clone.location, clone.problem) == (
        info.value.path,
        info.value.line,
        info.value.location,
        info.value.problem,
    )


def test_every_snapshot_has_a_case() -> None:
    stems = {p.stem for p in CASES}
    orphans = [p.name for p in CORPUS.glob("*.expected") if p.stem not in stems]
    assert not orphans


def test_field_path_and_line_are_attributes() -> None:
    with pytest.raises(loopsim.ScenarioError) as info:
        load_scenario(CORPUS / "delay_not_a_number.yaml")
    error = info.value
    assert error.location == "agents.web_search.script[2].delay"
    assert error.line == 8
    assert error.expected == "a number >= 0"
    assert str(error).endswith(
        'agents.web_search.script[2].delay: expected a number >= 0, got "soon"'
    )
