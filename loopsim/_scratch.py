"""A temporary folder of each simulation's own, for files libraries write by default.

Some libraries the code under test uses write to disk on their own account: upstream
agent_framework's harness keeps its file memory under ``{cwd}/agent-file-memory`` unless
told otherwise. Two runs of one program in one folder would then share those files, and
the second would see what the first wrote. Inside a simulation such defaults are pointed
into :func:`simulation_folder` instead (see ``loopsim.agent_framework._isolation``): a
fresh temporary folder per run, made on first use and removed when the run ends, however
it ends. The working directory is never changed (``os.chdir`` is process-wide and would
move every relative path of the user's own code).

The folder's name is random (``tempfile``); nothing loopsim records contains it.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import _trace
from ._trace import Trace

__all__ = ["removed_after", "simulation_folder"]

_FOLDER = "loopsim.simulation_folder"
_PREFIX = "loopsim-run-"
# Worker threads of one simulation (asyncio.to_thread copies its context) may ask at once.
_LOCK = threading.Lock()


def simulation_folder() -> Path | None:
    """The running simulation's own temporary folder (made on first use), else None."""
    trace = _trace.active()
    if trace is None:
        return None
    with _LOCK:
        folder: Path | None = trace.resources.get(_FOLDER)
        if folder is None:
            # resolved: agent_framework's file store refuses a root that is reached
            # through a link (macOS's /tmp -> /private/tmp)
            folder = Path(tempfile.mkdtemp(prefix=_PREFIX)).resolve()
            trace.resources[_FOLDER] = folder
    return folder


@contextmanager
def removed_after(trace: Trace) -> Iterator[None]:
    """Remove the folder ``trace``'s run made, if any, when the block ends (even on error)."""
    try:
        yield
    finally:
        with _LOCK:
            folder = trace.resources.pop(_FOLDER, None)
        if folder is not None:
            # a file another process still holds open must not turn a finished run into
            # an error; what is left lies in the system's temporary folder, not the user's
            shutil.rmtree(folder, ignore_errors=True)
