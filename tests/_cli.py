"""The loopsim command in a fresh process, as a user's shell runs it (test helper)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def loopsim_cli(
    *argv: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python -m loopsim ARGV``: text output captured, any exit code returned.

    ``env`` is added to this process's environment.
    """
    return subprocess.run(  # noqa: S603 - our own interpreter and arguments
        [sys.executable, "-m", "loopsim", *argv],
        cwd=cwd,
        env={**os.environ, **env} if env is not None else None,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
