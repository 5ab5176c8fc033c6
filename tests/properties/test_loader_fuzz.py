"""Fuzzing the scenario loader: any text or bytes either loads or gives a located error.

Five generators, each bounded to a few seconds under the CI profile (derandomized): random
YAML documents built from values, token soup, mutations of the shipped scenario files,
oversized numbers and dangling references put into the shipped files, and random bytes.
``LOOPSIM_FUZZ_SCALE=N`` multiplies every example count (``.ci/run`` runs them with 3). Anything but a clean ``ScenarioError`` (with a line) or a load is a failure:
a traceback of any other type, a hang (each input has a small wall budget), or an error
without a line.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from loopsim import ScenarioError
from loopsim._scenario import load_scenario, load_scenario_text

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").glob("*.loopsim.yaml"))
TEXTS = [p.read_text(encoding="utf-8") for p in SHIPPED]
#: wall seconds one input may take (every hostile case ends far below it)
BUDGET = 5.0
#: multiplies each generator's example count (a CI step runs the fuzzers with more)
SCALE = max(1, int(os.environ.get("LOOPSIM_FUZZ_SCALE", "1")))
FUZZ = settings(
    max_examples=150 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _error(load: Callable[[], object]) -> ScenarioError | None:
    """The ScenarioError ``load`` raised, None when it loaded; anything else propagates."""
    try:
        load()
    except ScenarioError as exc:
        return exc
    return None


def _check(error: ScenarioError | None, path: Path) -> None:
    if error is None:
        return
    for one in error.errors:
        assert one.line is not None, f"no line: {one}"
        assert one.line >= 1
        assert one.path == path
        str(one).encode("utf-8")  # printable by any CLI
        assert len(str(one)) < 4000


def _loads_or_located(text: str, fmt: str = "yaml", path: str = "fuzz.loopsim.yaml") -> None:
    started = time.perf_counter()
    error = _error(lambda: load_scenario_text(text, path=path, fmt=fmt))
    elapsed = time.perf_counter() - started
    _check(error, Path(path))
    assert elapsed < BUDGET, f"took {elapsed:.1f}s"


# -- random YAML documents -----------------------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["run", "advance", "restart", "reply", "script", "agents", "1e3", "on"])
)
_keys = st.sampled_from(
    [
        "version",
        "agents",
        "parent",
        "agent",
        "steps",
        "run",
        "script",
        "reply",
        "delay",
        "loop",
        "evaluators",
        "expect",
        "vary",
        "tools",
        "tool_call",
        "name",
        "arguments",
    ]
) | st.text(max_size=8)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=25,
)


@settings(FUZZ, max_examples=80 * SCALE)
@given(doc=st.dictionaries(_keys, _values, max_size=6), version=st.sampled_from([1, 1.0, 2, "1"]))
def test_random_yaml_documents(doc: dict[str, Any], version: Any) -> None:
    doc = {"version": version, **doc}
    _loads_or_located(yaml.safe_dump(doc, allow_unicode=True))


@settings(FUZZ, max_examples=80 * SCALE)
@given(doc=st.dictionaries(_keys, _values, max_size=6))
def test_random_json_documents(doc: dict[str, Any]) -> None:
    _loads_or_located(json.dumps({"version": 1, **doc}), fmt="json", path="fuzz.loopsim.json")


# -- token soup ----------------------------------------------------------------------------------

_TOKENS = [
    "version: 1\n", "agents:\n", "  w:", " {script: [done]}", "\n", "- ", "  ", ": ", "[", "]",
    "{", "}", ",", "&a ", "*a", "*b", "&b ", "<<: ", "!!int ", "!!float ", "!!str ",
    "!!binary ", "!!python/object:os.system ", "!foo ", "! ", "'", '"', "\\", "|\n", ">\n",
    "---\n", "...\n", "# c\n", "\t", "?", "%YAML 1.2\n", "%TAG ! tag:x,2000:\n", "~", "1e3",
    ".nan", ".inf", "0x1F", "0o7", "on", "yes", "\x07", "\x00", "\ufeff", "\u2028", "\x85",
    '"\\ud800"', "parent: {agent: w}\n", "steps:\n  - run: go\n", "é", "e\u0301",
]  # fmt: skip


#: Found by this fuzzer at 2251b23 (issue 26): !!float on a hexadecimal number crashed the
#: loader (ValueError), and a harness parent naming no agent raised KeyError.
FLOAT_HEX = "version: 1\nagents:\n  w: {script: [done]}\nparent: {agent: w}\nsteps:\n  - run: go\n  - advance: !!float 0x1F\n"
DANGLING_HARNESS = (
    "version: 1\nagents:\n  boss: {policy: {coordinator: {detach: true}}}\n"
    "  worker: {policy: {echo: {delay: 30}}}\n"
    "parent: {agent: nobody, background_agents: [worker], harness: true}\n"
    "loop:\n  should_continue: background_tasks_running\nsteps:\n  - run: research\n"
)


@FUZZ
@given(st.lists(st.sampled_from(_TOKENS), max_size=40))
@example(
    [
        "version: 1\n",
        "agents:\n",
        "  w:",
        " {script: [done]}",
        "\n",
        "parent: {agent: w}\n",
        "steps:\n  - run: go\n",
        "  - advance: ",
        "!!float ",
        "0x1F",
        "\n",
    ]
)
def test_token_soup(tokens: list[str]) -> None:
    _loads_or_located("".join(tokens))


# -- mutations of the shipped files --------------------------------------------------------------


@st.composite
def _mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        at = draw(st.integers(0, len(text) - 1))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "swap-lines"]))
        if kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)) :]
        elif kind == "insert":
            text = text[:at] + draw(st.sampled_from(_TOKENS) | st.text(max_size=3)) + text[at:]
        elif kind == "replace":
            text = text[:at] + draw(st.characters()) + text[at + 1 :]
        elif kind == "duplicate":
            end = min(len(text), at + draw(st.integers(1, 200)))
            text = text[:end] + text[at:end] + text[end:]
        else:
            lines = text.splitlines(keepends=True)
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            text = "".join(lines)
    return text


@FUZZ
@given(_mutated())
@example(FLOAT_HEX)
@example(DANGLING_HARNESS)
def test_mutations_of_the_shipped_scenarios(text: str) -> None:
    _loads_or_located(text)


def test_the_pinned_inputs_are_located_errors_or_load() -> None:
    assert load_scenario_text(FLOAT_HEX).scenario.steps  # 31 seconds, as YAML 1.2 says
    error = _error(lambda: load_scenario_text(DANGLING_HARNESS, path="fuzz.loopsim.yaml"))
    assert error is not None
    assert "nobody" in str(error)


# -- oversized numbers and dangling references in the shipped files ------------------------------

_NUMBER = re.compile(r"(?<=[:\[, ])(-?[0-9]+(?:\.[0-9]+)?)(?=[\],}\s])")
#: a reference's value: parent agent, background agents, children, decisions, task ids
_REFERENCE = re.compile(
    r"((?:agent|background_agents|children|decisions|task|only|for|of|delegate)\s*:\s*)"
    r"(\[[^\]\n]*\]|\{[^}\n]*\}|[^\s,}\]]+)"
)
_HUGE = st.sampled_from(
    ["9" * 400, "1" + "0" * 31, "1e400", "-1e400", "1e13", ".nan", "-.inf", "!!float 0x1F",
     "9007199254740993", "0x" + "F" * 40, "0o" + "7" * 120, "-" + "9" * 50]
)  # fmt: skip
_DANGLING = st.sampled_from(
    ["ghost", "[ghost]", "[]", "{}", "[{}]", "[{continue: x, stop: y}]", "''", "[worker, worker]",
     "null", "[null]", "9" * 40, "-1"]
)  # fmt: skip


@st.composite
def _hostile_values(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 3))):
        numbers = list(_NUMBER.finditer(text))
        references = list(_REFERENCE.finditer(text))
        if draw(st.booleans()) and numbers:
            found = draw(st.sampled_from(numbers))
            text = text[: found.start()] + draw(_HUGE) + text[found.end() :]
        elif references:
            found = draw(st.sampled_from(references))
            text = text[: found.start(2)] + draw(_DANGLING) + text[found.end(2) :]
    return text


@settings(FUZZ, max_examples=120 * SCALE)
@given(_hostile_values())
@example(FLOAT_HEX)
@example(DANGLING_HARNESS)
def test_oversized_numbers_and_dangling_references(text: str) -> None:
    _loads_or_located(text)


# -- random bytes, through the file reader -------------------------------------------------------


@settings(FUZZ, max_examples=100 * SCALE)
@given(
    data=st.binary(max_size=300)
    | st.builds(lambda t, b: t.encode() + b, st.sampled_from(TEXTS), st.binary(max_size=20)),
    suffix=st.sampled_from([".loopsim.yaml", ".loopsim.json"]),
)
def test_random_bytes_from_a_file(tmp_path_factory: Any, data: bytes, suffix: str) -> None:
    folder = tmp_path_factory.mktemp("fuzz", numbered=True)
    file = folder / f"case{suffix}"
    file.write_bytes(data)
    started = time.perf_counter()
    error = _error(lambda: load_scenario(file))
    assert time.perf_counter() - started < BUDGET
    _check(error, file)


def test_the_shipped_scenarios_load() -> None:
    assert len(TEXTS) >= 20
    for path in SHIPPED:
        load_scenario(path)
