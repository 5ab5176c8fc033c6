"""The scenario package is a one-way pipeline: no stage imports a later one.

schema → load → build → run → check → result → vary (design.md, "Two engines"). Deferred
imports inside functions count too: they are read from the syntax tree, not from what
happens to be imported at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "loopsim" / "_scenario"

#: Every module of the package, in pipeline order; each may import only earlier ones.
ORDER = (
    "_schema",  # stage 1: the file format
    "_jsonschema",
    "_limits",  # stage 2: load (its bounds first)
    "_source",
    "_yaml",
    "_json",
    "_validation",
    "_imports",
    "_model",  # `model:` agents: checked at load, their real client built at run time
    "_vocabulary",
    "_references",
    "_engines",
    "_vary_paths",
    "_loader",
    "_policies",  # stage 3: build
    "_factories",
    "_build",
    "_build_af",
    "_dry_build",  # loopsim validate: factories built, nothing run
    "_run",  # stage 4: run
    "_weak",  # stage 5: check (what the expectations leave unchecked first)
    "_tool_errors",
    "_value_checks",
    "_check",
    "_compare",
    "_result",  # stage 6: result
    "_vary",  # property runs drive the whole pipeline once per draw
)
MAX_LINES = 600


def _modules() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE
    )


def _stage(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def _scenario_imports(path: Path, package: Path = PACKAGE) -> set[str]:
    """The sibling stages ``path`` imports (relative imports resolved to a top-level name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    depth = len(path.relative_to(package).parts)  # 1: a module of the package; 2: in _schema/
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == depth and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 0 and node.module and node.module.startswith("loopsim._scenario."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("loopsim._scenario."):
                    found.add(alias.name.split(".")[2])
    return found


def test_every_module_is_placed_in_the_pipeline() -> None:
    stages = {_stage(p) for p in _modules()}
    assert stages == set(ORDER), "add new modules of loopsim/_scenario to ORDER"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_stage_imports_a_later_one(path: Path) -> None:
    stage = _stage(path)
    position = ORDER.index(stage)
    later = sorted(
        name for name in _scenario_imports(path) if name != stage and ORDER.index(name) > position
    )
    assert not later, f"{path.name} ({stage}) imports later stage(s): {', '.join(later)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines: split it (style.md, Layout)"


def test_the_scanner_sees_deferred_and_nested_imports(tmp_path: Path) -> None:
    # The layer test is only as good as this scanner: show it finds what it must.
    (tmp_path / "_schema").mkdir()
    nested = tmp_path / "_schema" / "_probe.py"
    nested.write_text(
        "def f():\n    from .._result import ScenarioResult\n    return ScenarioResult\n"
    )
    flat = tmp_path / "_check.py"
    flat.write_text(
        "from ._run import Execution\n"
        "def g():\n    from loopsim._scenario._vary import run_vary\n    return run_vary\n"
    )
    assert _scenario_imports(nested, tmp_path) == {"_result"}
    assert _scenario_imports(flat, tmp_path) == {"_run", "_vary"}
