"""Drive Debian's headless Chromium from the tests: load a file:// page, read its DOM.

One Chromium process per page: ``--dump-dom`` prints the DOM once the page is loaded and
its pending work is done (``--virtual-time-budget`` lets promises and timers run first).
With ``--enable-logging=stderr`` Chromium writes each console message (log, warning,
error, uncaught exception) to stderr as a ``CONSOLE`` line; :func:`load` returns those.
Nothing is served over the network: pages are files, and every network feature that
would phone home is switched off.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent
MERMAID_JS = HERE / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
MERMAID_PACKAGE = HERE / "node_modules" / "mermaid" / "package.json"

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--enable-logging=stderr",
    "--v=0",
)
_CONSOLE = re.compile(r':CONSOLE[^\]]*\] "(?P<message>.*)", source: (?P<source>\S*)')


def chromium() -> str | None:
    """The Chromium executable (``$LOOPSIM_CHROMIUM`` or ``chromium`` on PATH), or None."""
    configured = os.environ.get("LOOPSIM_CHROMIUM")
    if configured:
        return configured
    return shutil.which("chromium") or shutil.which("chromium-browser")


def in_ci() -> bool:
    """Whether ``$CI`` says this is a CI run (``CI=true``, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def _absent(reason: str) -> None:
    """Skip with the reason, except in CI (``CI=true``), which installs both: fail there."""
    if in_ci():
        pytest.fail(f"{reason}, and CI must run the browser tests")
    pytest.skip(reason)


def need_chromium() -> str:
    """The executable, or skip the test saying what is missing and how to get it."""
    found = chromium()
    if found is None:
        _absent("Chromium is not installed: run `apt-get install chromium` (.ci/run does)")
    assert found is not None
    return found


def need_mermaid() -> Path:
    """mermaid.min.js from the npm package, or skip saying how to install it."""
    if not MERMAID_JS.is_file():
        _absent(
            "the mermaid npm package is not installed: run `npm ci --prefix tests/browser` "
            "(.ci/run does)"
        )
    return MERMAID_JS


@dataclass(frozen=True)
class Page:
    """What Chromium saw: the final DOM and every console message."""

    dom: str
    console: list[str]


def load(page: Path, *, budget_ms: int = 20000, timeout: float = 90.0) -> Page:
    """Open ``page`` (a file) in a fresh headless Chromium and return its DOM and console."""
    executable = need_chromium()
    with tempfile.TemporaryDirectory(prefix="loopsim-chromium-") as profile:
        command = [
            executable,
            *_FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            "--dump-dom",
            page.resolve().as_uri(),
        ]
        done = subprocess.run(  # noqa: S603 - a fixed command line on a local file
            command, capture_output=True, text=True, timeout=timeout, check=False
        )
    if done.returncode != 0:
        msg = f"chromium exited with {done.returncode}: {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    console = [m.group("message") for m in _CONSOLE.finditer(done.stderr)]
    return Page(dom=done.stdout, console=console)


def screenshot(page: Path, target: Path, *, width: int = 1400, height: int = 2000) -> Path:
    """Save a PNG of ``page`` (for looking at the pictures by hand, not for asserting)."""
    executable = need_chromium()
    with tempfile.TemporaryDirectory(prefix="loopsim-chromium-") as profile:
        subprocess.run(  # noqa: S603 - a fixed command line on a local file
            [
                executable,
                *_FLAGS,
                f"--user-data-dir={profile}",
                "--virtual-time-budget=20000",
                f"--window-size={width},{height}",
                f"--screenshot={target}",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            timeout=90,
            check=True,
        )
    return target
