"""User code a scenario names (``module:Class`` evaluators): where it is imported from,
and a clear report when importing it goes wrong.

One rule for ``loopsim validate``, ``loopsim run`` (and plain pytest) and
``loopsim check-evaluator``: before importing, two folders go to the front of
``sys.path`` (when not there yet), as pytest does for conftest files:

1. the *base folder* of the scenario file (for ``check-evaluator``: of the current
   folder): the first folder upwards that is not a package (has no ``__init__.py``),
   so a module next to the scenario imports by its plain name;
2. the *rootdir*: pytest's rootdir under ``loopsim run``/pytest; otherwise the nearest
   folder upwards holding ``pytest.ini``, ``pyproject.toml``, ``tox.ini`` or
   ``setup.cfg``, else the base folder itself — so ``my_pkg.evaluators:Mine`` imports
   from the project root.

Importing runs the module's code. Anything it raises — an ``Exception``, a
``SyntaxError``, ``SystemExit`` (a module calling ``sys.exit`` or parsing ``sys.argv``
with argparse), ``KeyboardInterrupt`` — becomes a :class:`UserCodeError` naming the
module, never a traceback or a silent exit. While it imports, ``sys.argv`` holds only the
module's name and what it prints is held back (shown in the error when it fails).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import inspect
import io
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import _supervise
from ._schema import describe

__all__ = [
    "CONFIG_FILES",
    "UserCodeError",
    "base_folder",
    "check_options",
    "find_rootdir",
    "import_object",
    "import_user_module",
    "user_folders",
]

#: Files whose folder is the rootdir (the nearest one upwards), as pytest looks for them.
CONFIG_FILES = ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
#: Lines of held-back output shown in an import error.
OUTPUT_LINES = 8


class UserCodeError(Exception):
    """Importing or preparing user code failed; the message says what and where."""


# os.path rather than pathlib below: every scenario load walks these folders, and
# pathlib's objects cost more than the stat calls themselves (benchmarks/bench_stages.py).


def base_folder(folder: Path) -> Path:
    """The first folder from ``folder`` upwards without an ``__init__.py``."""
    current = os.path.realpath(folder)
    while os.path.isfile(os.path.join(current, "__init__.py")):  # noqa: PTH113, PTH118 - str paths: see above
        parent = os.path.dirname(current)  # noqa: PTH120 - str paths: see above
        if parent == current:
            break
        current = parent
    return Path(current)


def find_rootdir(folder: Path) -> Path:
    """The nearest folder from ``folder`` upwards holding a pytest config file, else
    ``folder`` itself."""
    start = current = os.path.realpath(folder)
    while True:
        if any(os.path.isfile(os.path.join(current, n)) for n in CONFIG_FILES):  # noqa: PTH113, PTH118
            return Path(current)
        parent = os.path.dirname(current)  # noqa: PTH120 - str paths: see above
        if parent == current:
            return Path(start)
        current = parent


def user_folders(path: Path | None, rootdir: str | Path | None = None) -> tuple[Path, ...]:
    """The folders user code of the scenario at ``path`` is imported from: its base
    folder, then the rootdir (given, else found from the base folder). Without a path
    (text, or ``check-evaluator``), the current folder stands in for the file's."""
    base = base_folder(Path.cwd() if path is None else path.parent)
    root = find_rootdir(base) if rootdir is None else Path(os.path.realpath(rootdir))
    return (base,) if root == base else (base, root)


def _front_of_path(folders: Sequence[Path]) -> None:
    for folder in reversed(folders):
        text = str(folder)
        if text not in sys.path:
            sys.path.insert(0, text)


@contextlib.contextmanager
def _quiet_argv(module_name: str) -> Iterator[io.StringIO]:
    held = io.StringIO()
    argv = sys.argv
    sys.argv = [module_name]
    try:
        with contextlib.redirect_stdout(held), contextlib.redirect_stderr(held):
            yield held
    finally:
        sys.argv = argv


def _said(held: io.StringIO) -> str:
    lines = held.getvalue().strip().splitlines()
    if not lines:
        return ""
    shown = lines[-OUTPUT_LINES:]
    return "; it printed: " + " | ".join(line.strip() for line in shown)


def import_user_module(module_name: str, folders: Sequence[Path]) -> ModuleType:
    """Import ``module_name`` with ``folders`` at the front of ``sys.path``.

    Raises:
        UserCodeError: naming the module and what went wrong, for anything the import
            raised (BaseExceptions included).
    """
    _front_of_path(folders)
    already = sys.modules.get(module_name)
    if already is not None:
        return already
    with (
        _supervise.phase("import", module=module_name, bound=_supervise.bounds().import_),
        _quiet_argv(module_name) as held,
    ):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and not module_name.startswith(exc.name):
                problem = f"importing module {module_name!r} failed: {exc}"
            else:
                problem = (
                    f"cannot import module {describe(module_name)}: {exc} (looked on sys.path, "
                    "the scenario's folder and its rootdir first)"
                )
            raise UserCodeError(problem + _said(held)) from None
        except SyntaxError as exc:
            where = f"{exc.filename}:{exc.lineno}" if exc.filename else "its source"
            msg = f"module {module_name!r} has a syntax error at {where}: {exc.msg}"
            raise UserCodeError(msg + _said(held)) from None
        except SystemExit as exc:
            msg = (
                f"importing module {module_name!r} called sys.exit({exc.code!r}) (a module "
                "loopsim imports must not exit or parse the command line at import)"
            )
            raise UserCodeError(msg + _said(held)) from None
        except KeyboardInterrupt:
            msg = f"importing module {module_name!r} raised KeyboardInterrupt"
            raise UserCodeError(msg + _said(held)) from None
        except BaseException as exc:  # noqa: BLE001 - any failure of user code is reported
            msg = f"importing module {module_name!r} raised {type(exc).__name__}: {exc}"
            raise UserCodeError(msg + _said(held)) from None
    printed = held.getvalue()
    if printed:
        sys.stdout.write(printed)
    return module


def import_object(import_path: str, folders: Sequence[Path]) -> Any:
    """Import ``module:attr.attr`` (see :func:`import_user_module`)."""
    module_name, _, attr = import_path.partition(":")
    if not module_name or not attr or not all(p.isidentifier() for p in module_name.split(".")):
        msg = f"bad import path {describe(import_path)}"
        raise UserCodeError(msg)
    target: Any = import_user_module(module_name, folders)
    for part in attr.split("."):
        if not hasattr(target, part):
            msg = f"module {describe(module_name)} has no attribute {describe(attr)}"
            raise UserCodeError(msg)
        target = getattr(target, part)
    return target


def check_options(target: Any, options: Mapping[str, Any]) -> tuple[str | None, str] | None:
    """Whether ``target(**options)`` fits its signature: None, or (the option at fault or
    None, what is wrong)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None  # no signature to check against (a builtin): the run will tell
    parameters = signature.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    named = [
        name
        for name, p in parameters.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    if not takes_any:
        for key in options:
            if key not in named:
                hint = difflib.get_close_matches(key, named, n=1)
                more = f"; did you mean {hint[0]!r}?" if hint else ""
                accepted = ", ".join(named) or "none"
                return key, f"unknown option {key!r}{more} (it accepts: {accepted})"
    try:
        signature.bind(**options)
    except TypeError as exc:
        return None, f"its options do not fit {getattr(target, '__name__', target)}(): {exc}"
    return None
