"""Shared test configuration: hypothesis profiles and the backend parameter."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Imported before any in-process pytester run: pytester drops the modules a nested run
# imported, so agent_framework modules first imported there would come back as second
# copies (other classes) in later tests, and the agent_framework engine tests then fail
# by test order alone (seen under xdist after tests/plugin/test_collection.py). The same
# holds for loopsim's lazily imported modules: loopsim keeps the names it resolved, so a
# second inline run paired a new Transcript class with the old one (the snapshot tests
# failed when run alone).
import loopsim.testing

with contextlib.suppress(ImportError):
    import agent_framework

    import loopsim.agent_framework  # noqa: F401

    # agent_framework imports these lazily, on first attribute access
    _ = (agent_framework.BackgroundAgentsProvider, agent_framework.AgentLoopMiddleware)


# Profiles: "ci" is fast and derandomized (reproducible), "dev" explores more.
settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

BACKENDS = ["asyncio", "trio"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each test using it runs once per anyio backend."""
    return str(request.param)


def _load_agent_framework_eagerly() -> None:
    # agent_framework imports its submodules lazily (module __getattr__). freezegun's scan of
    # loaded modules triggers those imports; inside a pytester inline run (tests/plugin) they
    # would be undone by pytester's sys.modules restore, leaving a second copy of classes
    # such as BackgroundAgentsProvider and breaking upstream's own isinstance checks in
    # later tests. Loading everything once, before any test runs, keeps one copy.
    import contextlib
    import warnings

    try:
        import agent_framework
    except ImportError:  # the agent-framework extra is optional
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in dir(agent_framework):
            # an optional integration that is not installed fails to load: skip it
            with contextlib.suppress(Exception):
                getattr(agent_framework, name)


_load_agent_framework_eagerly()


# -- the suite leaves the checkout as it found it --------------------------------------
# `git status --porcelain` at the start and at the end of a run (in the xdist controller
# only, once): a file the tests wrote into the checkout and did not remove (such as
# upstream's default `agent-file-memory/` folder) fails the run, naming it.
ROOT = Path(__file__).parents[1]
_STATUS_BEFORE = pytest.StashKey[str]()


def _checkout_status() -> str | None:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return None  # not a git checkout (an unpacked sdist): nothing to compare
    lines = []
    # changed files, then untracked ones by folder: `git status` alone does not show an
    # empty folder (what upstream's file memory leaves), `ls-files --directory` does
    for command, prefix in (
        ("status --porcelain", ""),
        ("ls-files --others --exclude-standard --directory", "?? "),
    ):
        done = subprocess.run(  # noqa: S603 - a fixed command in our own checkout
            [git, *command.split()],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            return None
        lines.extend(prefix + line for line in done.stdout.splitlines())
    return "\n".join(sorted(set(lines)))


def _controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _controller(session.config):
        status = _checkout_status()
        if status is not None:
            session.config.stash[_STATUS_BEFORE] = status


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_STATUS_BEFORE, None)
    if before is None or not _controller(session.config):
        return
    after = _checkout_status() or ""
    new = sorted(set(after.splitlines()) - set(before.splitlines()))
    if new:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep("=", "the tests left the checkout changed", red=True)
            for line in new:
                reporter.write_line(f"git status: {line}")
        if exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- a skipped browser test says which command makes it run ---------------------------
BROWSER_SETUP = "apt-get install chromium && npm ci --prefix tests/browser"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if "tests/browser/" in str(getattr(report, "nodeid", "")).replace("\\", "/")
    ]
    if skipped:
        reasons = sorted({str(r.longrepr[2]) for r in skipped if isinstance(r.longrepr, tuple)})
        terminalreporter.write_sep(
            "=", f"{len(skipped)} browser tests skipped: run `{BROWSER_SETUP}`", yellow=True
        )
        for reason in reasons:
            terminalreporter.write_line(reason)


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Every ``os.fsync`` of the test (earlier tests' folders flushed first), by the path of what it flushed: regular files
    under ``"files"``, folders under ``"folders"`` (the paths are read through
    ``/proc/self/fd``: Linux only)."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("names file descriptors through /proc/self/fd")
    from loopsim._files import sync_folders

    sync_folders()  # what earlier tests wrote is not this test's
    seen: dict[str, list[str]] = {"files": [], "folders": []}
    real = os.fsync

    def counting(fd: int) -> None:
        kind = "folders" if stat.S_ISDIR(os.fstat(fd).st_mode) else "files"
        seen[kind].append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return seen


@pytest.fixture
def default_sigint() -> Iterator[None]:
    """SIGINT handled by Python's default handler (as in a terminal), restored after; a
    process started meanwhile gets the default disposition too, whatever an earlier test
    of this worker left behind."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
