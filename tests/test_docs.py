"""Examples in the docs are tests: README code blocks and the docstring examples."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import loopsim

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDE = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")


def blocks(language: str, text: str = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def modules() -> list[str]:
    found = pkgutil.walk_packages(loopsim.__path__, "loopsim.")
    # importing loopsim.__main__ runs the CLI
    return sorted(["loopsim", *(i.name for i in found if i.name != "loopsim.__main__")])


@pytest.mark.parametrize("name", modules())
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_readme_python_example_runs() -> None:
    (code,) = blocks("python")
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - the README's own example


@pytest.mark.parametrize(
    "code", blocks("python", GUIDE), ids=lambda c: c.splitlines()[-1][:40] or "block"
)
def test_guide_python_examples_run(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, "docs/guide.md", "exec"), {"__name__": "guide"})  # noqa: S102
    capsys.readouterr()


def test_readme_scenario_example_passes(tmp_path: Path) -> None:
    (yaml_text,) = blocks("yaml")
    path = tmp_path / "readme_example.loopsim.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    result = loopsim.run_scenario(loopsim.load_scenario(path))
    assert result.passed, result.report()


def test_cli_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "loopsim", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in ("run", "validate", "new", "schema", "show", "replay", "check-evaluator"):
        assert re.search(rf"^\s+{command}\s", out, flags=re.MULTILINE), command


def test_the_main_job_needs_no_test_extra() -> None:
    # `pip install pytest-loopsim` has no syrupy: the CLI, the plugin and loopsim.testing's
    # strategies must work without it (only the snapshot extension needs it).
    code = (
        "import sys; sys.modules['syrupy'] = None\n"
        "from loopsim.cli import main\n"
        "import loopsim.testing as t\n"
        "assert callable(t.scenarios) and callable(t.check_evaluator)\n"
        "try:\n"
        "    t.TranscriptSnapshotExtension\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('syrupy was imported')\n"
        "raise SystemExit(main(['validate', 'scenarios/']))\n"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and a fixed program
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


AF_DOCS = (ROOT / "docs" / "agent_framework.md").read_text(encoding="utf-8")
EVALUATORS = (ROOT / "docs" / "evaluators.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "code",
    blocks("python", AF_DOCS) + [b for b in blocks("python", EVALUATORS) if "my_project" not in b],
    ids=lambda c: c.strip().splitlines()[-1][:40] or "block",
)
def test_agent_framework_and_evaluator_docs_examples_run(
    code: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "examples"))
    exec(compile(code, "docs", "exec"), {"__name__": "docs"})  # noqa: S102 - our own docs
    capsys.readouterr()
