"""Start-up: ``import loopsim`` and the pytest plugin import only what they need.

Nothing here times anything (benchmarks/bench_startup.py measures); the tests look at
``sys.modules`` of fresh interpreters, where the heavy parts would show up.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import loopsim

#: imported only when used: never by ``import loopsim`` or by loading the plugin
HEAVY = (
    "hypothesis",
    "agent_framework",
    "yaml",
    "pydantic",
    "anyio",
    "freezegun",
    "loopsim._report",
    "loopsim._scenario",
    "loopsim._transcript",
)

PACKAGE = Path(loopsim.__file__).parent


def _fresh(code: str, cwd: Path | None = None) -> dict[str, bool]:
    """Run ``code`` in a fresh interpreter; which of HEAVY it left in ``sys.modules``."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        timeout=120,
    )
    found: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_import_loopsim_imports_none_of_the_heavy_parts() -> None:
    assert _fresh("import loopsim") == dict.fromkeys(HEAVY, False)


def test_loading_the_plugin_imports_none_of_the_heavy_parts() -> None:
    assert _fresh("import pytest\nimport loopsim.pytest_plugin") == dict.fromkeys(HEAVY, False)


def test_a_public_name_imports_its_module_on_first_use() -> None:
    # the probe can fail: the same check sees the modules once a name is used
    found = _fresh("import loopsim\nloopsim.load_scenario\nloopsim.Transcript")
    assert found["loopsim._scenario"]
    assert found["loopsim._transcript"]
    assert found["yaml"]
    assert not found["hypothesis"]
    assert not found["agent_framework"]


# -- the lazy table ------------------------------------------------------------------


def _type_checking_names() -> dict[str, str]:
    """name -> module of the ``if TYPE_CHECKING:`` imports of loopsim/__init__.py."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If):
            for child in node.body:
                if isinstance(child, ast.ImportFrom):
                    module = "." * child.level + (child.module or "")
                    for alias in child.names:
                        assert alias.asname == alias.name, alias.name  # an explicit re-export
                        names[alias.name] = module
    return names


def test_the_table_the_type_checking_imports_and_all_agree() -> None:
    table: dict[str, str] = loopsim._LAZY  # type: ignore[attr-defined] # the private table
    assert set(loopsim.__all__) == {*table, "__version__"}
    assert _type_checking_names() == table


def test_every_name_of_all_resolves_to_the_object_its_module_defines() -> None:
    import importlib

    table: dict[str, str] = loopsim._LAZY  # type: ignore[attr-defined] # the private table
    for name in loopsim.__all__:
        value = getattr(loopsim, name)
        assert value is not None, name
        if name in table:
            module = importlib.import_module(table[name], "loopsim")
            assert value is getattr(module, name), name


def test_dir_and_star_import_show_every_public_name() -> None:
    assert set(loopsim.__all__) <= set(dir(loopsim))
    namespace: dict[str, object] = {}
    exec("from loopsim import *", namespace)  # noqa: S102 - a fixed statement
    assert set(loopsim.__all__) <= set(namespace)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        _ = loopsim.NoSuchThing  # type: ignore[attr-defined]
    assert not hasattr(loopsim, "NoSuchThing")


def test_the_plugin_spells_the_record_modes_as_the_cassette_does() -> None:
    from loopsim import pytest_plugin
    from loopsim._transcript._cassette import RECORD_MODES

    assert pytest_plugin.RECORD_MODES == RECORD_MODES


# -- hypothesis at the end of a run ---------------------------------------------------

PROBE_CONFTEST = """\
import json, sys
from pathlib import Path

def pytest_unconfigure(config):
    Path("imported.json").write_text(json.dumps("hypothesis" in sys.modules))
"""


def _pytest(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], bool]:
    """An empty-or-small pytest run in a fresh process; and whether it imported hypothesis."""
    (folder / "conftest.py").write_text(PROBE_CONFTEST, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    imported = json.loads((folder / "imported.json").read_text(encoding="utf-8"))
    return done, bool(imported)


def test_a_run_that_used_no_hypothesis_does_not_import_it_at_the_end(tmp_path: Path) -> None:
    done, imported = _pytest(tmp_path)
    assert done.returncode == 5, done.stdout + done.stderr  # no tests
    assert not imported
    # without loopsim's plugin hypothesis's own summary imports it: the probe sees that
    _, imported = _pytest(tmp_path, "-p", "no:loopsim")
    assert imported


def test_hypothesis_summary_still_runs_when_asked_or_used(tmp_path: Path) -> None:
    done, _ = _pytest(tmp_path, "--hypothesis-show-statistics")
    assert "Hypothesis Statistics" in done.stdout
    (tmp_path / "test_prop.py").write_text(
        "from hypothesis import given, settings, strategies as st\n"
        "@settings(database=None, derandomize=True)\n"
        "@given(st.integers())\n"
        "def test_small(n):\n"
        "    assert n < 10\n",
        encoding="utf-8",
    )
    done, imported = _pytest(tmp_path, "-q", "--hypothesis-show-statistics")
    assert done.returncode == 1
    assert imported
    assert "test_prop.py::test_small:" in done.stdout  # the statistics of the test that ran
