"""The YAML builder's fast path for plain scalars gives what its general path gives.

``_Builder.scalar`` takes the common scalars (inside a list or mapping, no anchor, no tag,
text that needs no check) itself and hands every other one to ``_Builder._scalar``. For
any text, the values, the line of every key and item, and every error (problem, line,
location) are the same as with the general path alone, under the default limits and
under limits small enough to be reached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim import ScenarioError
from loopsim._scenario import _yaml
from loopsim._scenario._limits import DEFAULT_LIMITS, ScenarioLimits

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "scenarios").glob("*.yaml"))]
SMALL = ScenarioLimits(max_nodes=12, max_depth=3)

_TOKENS = [
    "a: ", "b: ", "k", "- ", "  ", "\n", "[", "]", "{", "}", ", ", ": ", "&x ", "*x", "<<: ",
    "'q'", '"d"', '"\\ud800"', "!!str ", "!!int ", "! ", "1", "-2", "0x1F", "1e3", ".nan",
    ".inf", "~", "null", "true", "False", "on", "word", "DONE", "é", "", "99999999999999999999999999999999",
    "<<", "x: &y [1, 2]\n", "z: *y\n", "? ", "|\n  t\n",
]  # fmt: skip


def _outcome(text: str, limits: ScenarioLimits) -> str:
    try:
        data, lines = _yaml.parse_yaml(text, Path("f.yaml"), limits)
    except ScenarioError as exc:
        return f"error {exc.problem!r} line {exc.line} at {exc.location}"
    return repr((data, sorted(lines.items(), key=repr)))


def _both(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for limits in (DEFAULT_LIMITS, SMALL):
        fast = _outcome(text, limits)
        with monkeypatch.context() as patch:
            patch.setattr(_yaml._Builder, "scalar", _yaml._Builder._scalar)
            general = _outcome(text, limits)
        assert fast == general


@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(st.sampled_from(_TOKENS), max_size=30))
def test_token_soup_reads_alike(tokens: list[str]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _both("".join(tokens), monkeypatch)


_values: Any = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(doc=_values, flow=st.booleans())
def test_dumped_documents_read_alike(doc: Any, flow: bool) -> None:
    text = yaml.safe_dump(doc, allow_unicode=True, default_flow_style=flow)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _both(text, monkeypatch)


@pytest.mark.parametrize("text", TEXTS)
def test_the_shipped_files_read_alike(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _both(text, monkeypatch)
