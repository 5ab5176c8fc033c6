"""The distribution's name and extras, as every install line in the docs spells them.

The import name and the command are ``loopsim``; the distribution is ``pytest-loopsim``
(``loopsim`` on PyPI is an unrelated package). A ``pip install`` line anywhere a user
reads one (README, docs/, the error messages in loopsim/) must name this project's
distribution or the checkout (``.``), with extras ``pyproject.toml`` defines, and any
other package it names must be one of our dependencies. The built wheel and sdist are
installed in a fresh venv by ``.ci/check_dist`` (run by ``.ci/run``).
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DOCUMENTS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "loopsim").rglob("*.py")]
)
# `pip install` and what follows up to the end of the command on that line (prose may wrap
# the line right after `pip install`)
_INSTALL = re.compile(r"pip install(?:[ \t]+|[ \t]*\n[ \t]*)((?:[^\s`&;|)\"]+[ \t]*)+)")
_REQUIREMENT = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)(?:\[(?P<extras>[^\]]*)\])?")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dependency_names() -> set[str]:
    listed = [*PROJECT["dependencies"]]
    for extra in PROJECT["optional-dependencies"].values():
        listed.extend(extra)
    return {_normal(_REQUIREMENT.match(item).group("name")) for item in listed}  # type: ignore[union-attr]


def install_lines(text: str) -> list[tuple[int, list[str]]]:
    """(line number, requirement words) of each ``pip install`` in ``text``."""
    found = []
    for match in _INSTALL.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        words = [
            w for w in shlex.split(match.group(1).replace("\n", " "), comments=True) if w != "-e"
        ]
        found.append((line, [w for w in words if not w.startswith("-")]))
    return found


def problems(requirement: str) -> list[str]:
    """What is wrong with one requirement word of an install line (empty: nothing)."""
    ours = _normal(PROJECT["name"])
    if requirement.startswith("."):
        name, extras = ours, re.findall(r"\[([^\]]*)\]", requirement)
        extras_text = extras[0] if extras else None
    else:
        match = _REQUIREMENT.match(requirement)
        if match is None:
            return [f"{requirement!r} is not a requirement"]
        name, extras_text = _normal(match.group("name")), match.group("extras")
    if name == "loopsim":
        return [f"{requirement!r} installs PyPI's unrelated 'loopsim'; ours is {PROJECT['name']!r}"]
    if name != ours:
        if name not in _dependency_names():
            return [f"{requirement!r} is neither {PROJECT['name']!r} nor one of its dependencies"]
        return []
    defined = set(PROJECT["optional-dependencies"])
    asked = {e.strip() for e in (extras_text or "").split(",") if e.strip()}
    return [
        f"{requirement!r}: no extra {extra!r} in pyproject.toml"
        for extra in sorted(asked - defined)
    ]


def test_the_distribution_is_ours_and_the_import_name_and_command_stay() -> None:
    assert PROJECT["name"] == "pytest-loopsim"
    assert PROJECT["scripts"] == {"loopsim": "loopsim.cli:main"}
    assert PROJECT["entry-points"]["pytest11"] == {"loopsim": "loopsim.pytest_plugin"}
    # the extras that refer to the project itself use its distribution name
    for extra, items in PROJECT["optional-dependencies"].items():
        for item in items:
            assert not item.startswith("loopsim["), (extra, item)


def test_every_install_line_names_the_distribution_and_real_extras() -> None:
    seen = 0
    wrong = []
    for path in DOCUMENTS:
        for line, requirements in install_lines(path.read_text(encoding="utf-8")):
            for requirement in requirements:
                seen += 1
                wrong.extend(f"{path.relative_to(ROOT)}:{line}: {p}" for p in problems(requirement))
    assert wrong == []
    assert seen >= 10  # the README's, the docs' and the error messages' lines were all read


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pip install 'loopsim[agent-framework]'", ["installs PyPI's unrelated 'loopsim'"]),
        ("pip install loopsim", ["installs PyPI's unrelated 'loopsim'"]),
        ("pip install 'pytest-loopsim[agnet-framework]'", ["no extra 'agnet-framework'"]),
        ("pip install -e '.[dev,bench]'", []),
        ("pip install -e '.[tests]'", ["no extra 'tests'"]),
        ("`pip install\n'pytest-loopsim[shard]'`", []),
        ("pip install requests", ["neither 'pytest-loopsim' nor one of its dependencies"]),
        ("pip install trio && loopsim run", []),
    ],
)
def test_the_check_catches_a_wrong_install_line(text: str, expected: list[str]) -> None:
    ((_, requirements),) = install_lines(text)
    found = [p for r in requirements for p in problems(r)]
    assert len(found) == len(expected)
    for message, part in zip(found, expected, strict=True):
        assert part in message


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def test_the_readme_set_up_is_two_commands_that_ci_and_tox_run() -> None:
    section = _section("Set up")
    commands = re.findall(r"```bash\n(.*?)\n```", section, flags=re.DOTALL)
    assert len(commands) == 2
    scenarios, tests = commands
    assert scenarios.endswith(".venv/bin/loopsim run scenarios/")
    assert "pip install -e '.[dev]'" in tests
    # what the test command needs, and how long it takes, in one line after it
    assert "Chromium" in section
    assert "npm" in section
    assert re.search(r"about \d+ minutes on 2 cores", section)
    pytest_command = tests.rsplit("&& ", 1)[1]
    assert pytest_command == ".venv/bin/python -m pytest -n 2"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"\n{pytest_command}\n" in ci
    assert "npm ci --prefix tests/browser" in tests
    assert "npm ci --prefix tests/browser" in ci
    assert ".ci/check_dist" in ci
    tox = (ROOT / "tox.ini").read_text(encoding="utf-8")
    testenv = tox[tox.index("[testenv]") : tox.index("[testenv:")]
    assert "\nextras = dev\n" in testenv  # the same extra as the README's command
    assert "\ncommands = python -m pytest -n 2 {posargs}\n" in testenv
    assert "pass_env = CI" in testenv
    extras = PROJECT["optional-dependencies"]["dev"]
    assert any(_normal(_REQUIREMENT.match(e).group("name")) == "tox" for e in extras)  # type: ignore[union-attr]


# import name -> distribution, where the two differ (the plain install's dependencies)
_IMPORT_NAMES = {"yaml": "pyyaml", "xdist": "pytest-xdist"}


def module_level_imports(source: str) -> set[str]:
    """The top-level names a module imports when it is loaded (not inside functions)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def plain_install_lacks(source: str, siblings: set[str]) -> list[str]:
    """The modules ``source`` imports at load time that a plain ``pip install`` lacks."""
    core = {_normal(_REQUIREMENT.match(d).group("name")) for d in PROJECT["dependencies"]}  # type: ignore[union-attr]
    allowed = {*sys.stdlib_module_names, "loopsim", "__future__", *siblings}
    return sorted(
        name
        for name in module_level_imports(source)
        if name not in allowed and _normal(_IMPORT_NAMES.get(name, name)) not in core
    )


def test_shipped_scenario_code_needs_only_a_plain_install() -> None:
    # the README's first command is `pip install -e . && loopsim run scenarios/`: a shipped
    # scenario's own module may not need a test-only library (tenacity once did)
    files = sorted((ROOT / "scenarios").glob("*.py"))
    siblings = {f.stem for f in files}
    assert files
    lacking = {f.name: plain_install_lacks(f.read_text(encoding="utf-8"), siblings) for f in files}
    assert {name: mods for name, mods in lacking.items() if mods} == {}


def test_the_plain_install_check_catches_a_test_only_import() -> None:
    source = "import tenacity\nimport anyio\nimport yaml\n\ndef f():\n    import agent_framework\n"
    assert plain_install_lacks(source, set()) == ["tenacity"]
