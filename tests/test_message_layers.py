"""The message layer imports in one direction, deferred imports included.

fields → hosted → content → structured → message → factory/updates → chat (issue 25 item 8): each module
may import only the modules before it, at module level or inside a function alike.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "loopsim" / "_messages"
ORDER = (
    "_fields",
    "_hosted",
    "_content",
    "_structured",
    "_message",
    "_factory",
    "_updates",
    "_chat",
)


def _siblings(path: Path) -> list[tuple[str, bool]]:
    """The sibling modules ``path`` imports, each with whether the import is deferred."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    return [
        (node.module.split(".")[0], id(node) not in top_level)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    ]


def test_every_module_of_the_layer_is_in_the_order() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert modules == set(ORDER)


@pytest.mark.parametrize("module", ORDER)
def test_a_module_imports_only_earlier_ones_and_never_inside_a_function(module: str) -> None:
    for imported, deferred in _siblings(PACKAGE / f"{module}.py"):
        assert ORDER.index(imported) < ORDER.index(module), (module, imported)
        assert not deferred, (module, imported)
