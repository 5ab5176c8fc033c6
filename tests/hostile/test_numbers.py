"""Numbers bounded at load: every numeric field of every shipped scenario, made hostile.

A 400-digit ``delay``, ``advance``, ``expect.elapsed`` or ``limits.*`` once raised
``OverflowError`` (``loopsim run`` printed about 990 lines), a huge ``wait_timeout``
validated and then overflowed in ``run_scenario``, and ``!!float 0x1F`` crashed
``loopsim validate``. Here each numeric value in each shipped scenario is replaced in
turn by a huge integer, a float literal that overflows to infinity, ``.nan``, ``.inf``,
and a number past the bounds: each is a located error or a clean load; the largest value
of the field's kind that loads also runs to an end without a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _cli import loopsim_cli

from loopsim import ScenarioError, SimulationError
from loopsim._scenario import load_scenario_text, run_scenario
from loopsim._scenario._schema._base import MAX_COUNT, MAX_SECONDS

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").glob("*.loopsim.yaml"))
PLACEHOLDER = "__hostile_number__"
HOSTILE = ["9" * 400, "1e400", ".nan", ".inf", "1e13", str(MAX_COUNT + 1), "!!float 0x1F"]


def _numbers(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _numbers(item, (*path, index))


def _with(document: Any, path: tuple[Any, ...], number: str) -> str:
    copy = yaml.safe_load(yaml.safe_dump(document))
    holder = copy
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = PLACEHOLDER
    return (
        yaml.safe_dump(copy, sort_keys=False)
        .replace(PLACEHOLDER, number)
        .replace(f"'{number}'", number)
    )


CASES = [
    (scenario, path)
    for scenario in SHIPPED
    for path in _numbers(yaml.safe_load(scenario.read_text(encoding="utf-8")))
    if path != ("version",)
]


def _where(case: tuple[Path, tuple[Any, ...]]) -> str:
    return f"{case[0].name.split('.')[0]}:{'.'.join(map(str, case[1]))}"


def _load(text: str, scenario: Path) -> Any:
    """The loaded scenario, or None after checking the error is located."""
    try:
        return load_scenario_text(text, path=scenario)
    except ScenarioError as error:
        problem = error
    assert problem.line is not None, str(problem)
    assert "Traceback" not in str(problem)
    return None


@pytest.mark.parametrize("case", CASES, ids=[_where(c) for c in CASES])
def test_every_numeric_field_bounds_hostile_numbers(case: tuple[Path, tuple[Any, ...]]) -> None:
    scenario, path = case
    document = yaml.safe_load(scenario.read_text(encoding="utf-8"))
    for number in HOSTILE:
        loaded = _load(_with(document, path, number), scenario)
        if loaded is not None:  # the field takes any value (a tool result): it must also run
            _run(loaded, number)
    # The largest value of the field's own kind loads (or is located) and runs to an end.
    holder = document
    for part in path:
        holder = holder[part]
    largest = str(MAX_COUNT) if isinstance(holder, int) else repr(MAX_SECONDS)
    loaded = _load(_with(document, path, largest), scenario)
    if loaded is not None:
        _run(loaded, largest)


def _run(loaded: Any, number: str) -> None:
    try:
        result = run_scenario(loaded)
    except (ScenarioError, SimulationError):
        return
    except Exception as exc:
        pytest.fail(f"{number}: {type(exc).__name__}: {exc}", pytrace=False)
    assert result is not None


def test_the_issues_reproducers_are_located_errors(tmp_path: Path) -> None:
    big = "9" * 400
    head = "version: 1\nagents:\n  a: {script: [done]}\nparent: {agent: a}\n"
    for text, field in [
        (head + f"steps:\n  - run: hi\n  - advance: {big}\n", "advance"),
        (head + f"steps:\n  - run: hi\nexpect:\n  elapsed: {big}\n", "elapsed"),
        (head + f"limits:\n  virtual_time: {big}\nsteps:\n  - run: hi\n", "virtual_time"),
        (head + "limits:\n  real_time: 1e400\nsteps:\n  - run: hi\n", "real_time"),
        (head + "steps:\n  - run: hi\nexpect:\n  elapsed: .nan\n", "elapsed"),
    ]:
        with pytest.raises(ScenarioError) as info:
            load_scenario_text(text, path=tmp_path / "s.loopsim.yaml")
        assert info.value.line is not None
        assert field in str(info.value)
    loaded = load_scenario_text(head + "steps:\n  - run: hi\n  - advance: !!float 0x1F\n")
    assert run_scenario(loaded).elapsed == 31.0


def test_a_huge_number_in_json_is_located(tmp_path: Path) -> None:
    for number, expected in (("9" * 400, "digits"), ("1e400", "infinity"), ("NaN", "NaN")):
        text = (
            '{"version": 1, "agents": {"a": {"script": ["done"]}}, "parent": {"agent": "a"},\n'
            f' "steps": [{{"run": "hi"}}, {{"advance": {number}}}]}}\n'
        )
        with pytest.raises(ScenarioError, match=expected) as info:
            load_scenario_text(text, path=tmp_path / "s.loopsim.json")
        assert info.value.line == 2


def test_loopsim_validate_prints_a_located_line_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "big.loopsim.yaml"
    path.write_text(
        "version: 1\nagents:\n  a: {script: [{reply: done, delay: " + "9" * 400 + "}]}\n"
        "parent: {agent: a}\nsteps:\n  - run: hi\n",
        encoding="utf-8",
    )
    done = loopsim_cli("validate", str(path), cwd=tmp_path)
    assert done.returncode != 0
    assert f"{path}:3:" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert len((done.stdout + done.stderr).splitlines()) < 10
