"""User evaluator modules: imported from the scenario's folder and rootdir, the same way in
``validate``, ``run`` and ``check-evaluator``; whatever they raise is a located report."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cli import loopsim_cli

import loopsim
from loopsim._scenario import load_scenario, run_scenario
from loopsim._scenario._imports import base_folder, find_rootdir
from loopsim.cli import main
from loopsim.testing._commands import cmd_check_evaluator

EVALUATOR = """\
import loopsim


class Keyword(loopsim.LoopEvaluator):
    def __init__(self, keyword: str = "DONE") -> None:
        self.keyword = keyword

    async def evaluate(self, context):
        if self.keyword in context.last_response.text:
            return loopsim.LoopEvaluation.stop()
        return loopsim.LoopEvaluation.continue_with_feedback("more")
"""

SCENARIO = """\
version: 1
agents:
  writer: {{script: [draft, final DONE]}}
parent: {{agent: writer}}
loop:
  evaluators:
    - {target}
steps:
  - run: write
expect: {{iterations: 2}}
"""


@pytest.fixture(autouse=True)
def _isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("ev_", "pkg_")):
            del sys.modules[name]


def _project(tmp_path: Path, module: str, source: str, target: str) -> Path:
    """project/ (with pytest.ini) holding scenarios/<module>.py and a scenario using it."""
    project = tmp_path / "project"
    scenarios = project / "scenarios"
    scenarios.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (scenarios / f"{module}.py").write_text(source, encoding="utf-8")
    path = scenarios / "s.loopsim.yaml"
    path.write_text(SCENARIO.format(target=target), encoding="utf-8")
    return path


def _name(tmp_path: Path, prefix: str = "ev_") -> str:
    return prefix + "".join(c if c.isalnum() else "_" for c in tmp_path.name)


def test_rootdir_is_the_nearest_folder_with_a_config_file(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_rootdir(deep) == deep.resolve()  # none: the folder itself
    (tmp_path / "a" / "tox.ini").write_text("", encoding="utf-8")
    assert find_rootdir(deep) == (tmp_path / "a").resolve()
    (deep / "setup.cfg").write_text("", encoding="utf-8")
    assert find_rootdir(deep) == deep.resolve()
    (deep / "__init__.py").write_text("", encoding="utf-8")
    assert base_folder(deep) == (tmp_path / "a").resolve()


def test_a_module_next_to_the_scenario_imports_without_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _name(tmp_path)
    path = _project(tmp_path, module, EVALUATOR, f"{module}:Keyword")
    monkeypatch.chdir(tmp_path)  # not the scenario's folder
    assert main(["validate", str(path)]) == 0
    assert "1 valid, 0 invalid" in capsys.readouterr().out
    assert run_scenario(load_scenario(path)).passed


def test_a_package_at_the_rootdir_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _name(tmp_path, "pkg_")
    path = _project(tmp_path, "unused", "", f"{package}.evals:Keyword")
    (path.parent.parent / package).mkdir()
    (path.parent.parent / package / "__init__.py").write_text("", encoding="utf-8")
    (path.parent.parent / package / "evals.py").write_text(EVALUATOR, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert run_scenario(load_scenario(path)).passed


def test_loopsim_run_imports_the_same_way(tmp_path: Path) -> None:
    module = _name(tmp_path)
    path = _project(tmp_path, module, EVALUATOR, f"{module}:Keyword")
    done = loopsim_cli("run", str(path), "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


HOSTILE = {
    "raises": ("raise ValueError('no config found')", "raised ValueError: no config found"),
    "syntax": ("def broken(:\n    pass", "has a syntax error at"),
    "exit-0": ("import sys\nsys.exit(0)", "called sys.exit(0)"),
    "argparse": (
        (
            "import argparse\np = argparse.ArgumentParser()\np.add_argument('--db', required=True)\n"
            "p.parse_args()"
        ),
        "called sys.exit(2)",
    ),
    "keyboard": ("raise KeyboardInterrupt", "raised KeyboardInterrupt"),
    "missing-dependency": ("import no_such_dependency_xyz", "No module named"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_module_failing_at_import_is_a_located_error_everywhere(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source, said = HOSTILE[case]
    module = _name(tmp_path)
    path = _project(tmp_path, module, source + "\n" + EVALUATOR, f"{module}:Keyword")
    with pytest.raises(loopsim.ScenarioError) as info:
        load_scenario(path)
    error = info.value
    assert error.line == 7
    assert module in str(error)
    assert said in str(error)
    capsys.readouterr()

    assert main(["validate", str(path)]) == 2  # never exit 0 on a module that exits
    out = capsys.readouterr().out
    assert "invalid" in out
    assert said in out
    assert "0 valid, 1 invalid" in out

    monkeypatch.chdir(path.parent)
    sys.modules.pop(module, None)
    import argparse

    args = argparse.Namespace(
        target=f"{module}:Keyword", options=None, max_examples=5, budget=60.0, marker="DONE"
    )
    assert cmd_check_evaluator(args) == 2
    err = capsys.readouterr().err
    assert module in err
    assert said in err


def test_output_of_a_failing_module_is_shown_in_its_error(tmp_path: Path) -> None:
    module = _name(tmp_path)
    source = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--db', required=True)\np.parse_args()\n"
    path = _project(tmp_path, module, source, f"{module}:Keyword")
    with pytest.raises(loopsim.ScenarioError, match="the following arguments are required: --db"):
        load_scenario(path)


def test_evaluator_options_are_checked_against_the_signature(tmp_path: Path) -> None:
    module = _name(tmp_path)
    target = f"{module}:Keyword: {{keywrd: DONE}}"
    path = _project(tmp_path, module, EVALUATOR, target)
    with pytest.raises(loopsim.ScenarioError) as info:
        load_scenario(path)
    error = info.value
    assert error.line == 7
    assert error.location == f"loop.evaluators[0].{module}:Keyword.keywrd"
    assert "unknown option 'keywrd'; did you mean 'keyword'?" in str(error)
    good = path.read_text(encoding="utf-8").replace("keywrd", "keyword")
    path.write_text(good, encoding="utf-8")
    assert run_scenario(load_scenario(path)).passed
    missing = EVALUATOR.replace('keyword: str = "DONE"', "keyword: str")
    (path.parent / f"{module}.py").write_text(missing, encoding="utf-8")
    sys.modules.pop(module, None)
    path.write_text(SCENARIO.format(target=f"{module}:Keyword"), encoding="utf-8")
    with pytest.raises(loopsim.ScenarioError, match="missing a required argument: 'keyword'"):
        load_scenario(path)


def test_a_module_that_prints_while_importing_still_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _name(tmp_path)
    path = _project(
        tmp_path, module, "print('hello from the module')\n" + EVALUATOR, f"{module}:Keyword"
    )
    load_scenario(path)
    assert "hello from the module" in capsys.readouterr().out


def test_docs_state_the_import_rule() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "scenarios.md").read_text("utf-8")
    assert "pytest.ini" in docs
    assert "treat them as code" in docs
    assert "rootdir" in docs
