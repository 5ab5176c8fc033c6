"""The test suite itself: it leaves the checkout as it found it, and a browser test that
cannot run says which command makes it run (and fails instead in CI).

Each check runs pytest in a fresh process on this checkout's own conftest, so what is
shown is what a developer's ``python -m pytest`` does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
GIT = shutil.which("git")


def pytest_run(
    *argv: str, env: dict[str, str], cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and arguments
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def no_browser_env(**extra: str) -> dict[str, str]:
    """This environment with no Chromium on PATH (only our interpreter's folder)."""
    env = {k: v for k, v in os.environ.items() if k not in {"CI", "LOOPSIM_CHROMIUM"}}
    env["PATH"] = str(Path(sys.executable).parent)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return {**env, **extra}


BROWSER_TEST = (
    "tests/browser/test_browser_report.py::test_the_report_loads_without_a_console_message"
)


def test_a_skipped_browser_test_names_the_command_that_makes_it_run() -> None:
    done = pytest_run(BROWSER_TEST, env=no_browser_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert (
        "1 browser tests skipped: run `apt-get install chromium && npm ci --prefix tests/browser`"
        in done.stdout
    )
    assert "Chromium is not installed: run `apt-get install chromium`" in done.stdout


@pytest.mark.parametrize("value", ["true", "1"])
def test_in_ci_a_browser_test_that_cannot_run_fails(value: str) -> None:
    done = pytest_run(BROWSER_TEST, env=no_browser_env(CI=value))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 error" in done.stdout  # the page fixture fails, so the test errors
    assert "CI must run the browser tests" in done.stdout


@pytest.mark.skipif(GIT is None or not (ROOT / ".git").exists(), reason="needs a git checkout")
def test_a_run_that_leaves_a_file_in_the_checkout_fails(tmp_path: Path) -> None:
    probe = ROOT / f"left-behind-{os.getpid()}.txt"
    test_file = tmp_path / "test_leaves_a_file.py"
    test_file.write_text(
        f"from pathlib import Path\ndef test_x():\n    Path({str(probe)!r}).write_text('x')\n",
        encoding="utf-8",
    )
    env = no_browser_env()
    env["PATH"] = os.pathsep.join([env["PATH"], str(Path(GIT).parent)])  # type: ignore[arg-type]
    try:
        # tests/conftest.py as a plugin, so its session check runs for a file outside tests/
        done = pytest_run(
            "-p",
            "conftest",
            f"--rootdir={ROOT}",
            str(test_file),
            env={**env, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), env["PYTHONPATH"]])},
        )
    finally:
        probe.unlink(missing_ok=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "the tests left the checkout changed" in done.stdout
    assert f"git status: ?? {probe.name}" in done.stdout
