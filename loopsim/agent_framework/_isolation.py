"""What agent_framework writes to disk by default goes to the simulation's own folder.

The one default of the installed package that writes files is the harness's file memory:
``create_harness_agent`` without ``file_memory_store`` builds a
``FileSystemAgentFileStore(Path.cwd() / "agent-file-memory")``. Run twice in one folder,
a program's second run would read the memories its first run wrote (and a test suite
would leave the folder behind). So, once :func:`install` has run (importing
``loopsim.agent_framework`` does it, and a simulation that starts while agent_framework
is loaded imports that first):

* a store that ``create_harness_agent`` made as that default is marked, and while a
  simulation runs its root is ``agent-file-memory`` inside the simulation's temporary
  folder (:func:`loopsim._scratch.simulation_folder`), removed when the run ends. Outside
  a simulation it is the folder upstream chose, unchanged; a harness built before the
  run and run inside it is redirected too;
* a store made before :func:`install` ran (a harness built before
  ``loopsim.agent_framework`` was imported) carries no mark. It is taken for the default
  when its root is where upstream puts the default: ``agent-file-memory`` in the working
  directory (the one when the store is used, or the one when :func:`install` ran). Any
  other root is the user's. The one case this cannot tell apart: a store the user built,
  before the import, on exactly that folder; it is redirected like the default (its
  files would land in the working directory, which a run never touches);
* a store the user builds or passes (``file_memory_store=``, ``file_access_store=``) is
  theirs: its root is used as given, in a simulation as in production;
* the working directory is never changed (no ``os.chdir``).

The model never sees the root: the memory tools and the memory index name files relative
to it, so requests read the same as in production.

Mechanics: ``_root_path`` (where the store keeps its resolved root) becomes a property of
``FileSystemAgentFileStore`` that returns the stored value, except for default stores in a
simulation; the property is read at run time, so stores made before :func:`install` go
through it too. ``__init__`` is wrapped to mark every store made after :func:`install` as
known (the user's unless ``create_harness_agent`` made it as its default). Nothing is
subclassed, so the store's type and upstream's ``ExperimentalWarning`` stay as they are.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import agent_framework as af

from .._scratch import simulation_folder
from ._upstream import (
    DEFAULT_MEMORY_FOLDER,
    DEFAULT_STORE_ASSEMBLER,
    STORE_ROOT_ATTRIBUTE,
    unwrapped,
)

__all__ = ["install"]

#: Set on every store made after :func:`install`: True for the harness's default store,
#: False for the user's. A store without it was made before (origin unknown).
_DEFAULT = "_loopsim_default_store"
_WRAPPED = "__loopsim_wrapped__"
#: The working directory when :func:`install` first ran (a harness built before the
#: import most likely put its default store there).
_INSTALL_CWD: list[Path] = []


def _working_directories() -> list[Path]:
    try:
        now = [Path.cwd().resolve()]  # the call upstream makes for the default
    except OSError:  # the working directory was removed: nothing can be written there
        now = []
    return now + _INSTALL_CWD


def _is_default(store: Any, root: Path) -> bool:
    known = store.__dict__.get(_DEFAULT)
    if known is not None:
        return bool(known)
    return root.name == DEFAULT_MEMORY_FOLDER and root.parent in _working_directories()


def _root(store: Any) -> Path:
    root: Path = store.__dict__[STORE_ROOT_ATTRIBUTE]
    folder = simulation_folder()
    if folder is not None and _is_default(store, root):
        return folder / root.name
    return root


def _set_root(store: Any, value: Path) -> None:
    store.__dict__[STORE_ROOT_ATTRIBUTE] = value


def _mark_known(store_class: Any) -> None:
    original = store_class.__init__
    if getattr(original, _WRAPPED, None) is not None:
        return

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - the method
        original(self, *args, **kwargs)
        self.__dict__.setdefault(_DEFAULT, False)

    setattr(__init__, _WRAPPED, original)
    store_class.__init__ = __init__


def install() -> None:
    """Redirect the harness's default file-memory store inside simulations (idempotent)."""
    store_class: Any = af.FileSystemAgentFileStore
    if not _INSTALL_CWD:
        _INSTALL_CWD.extend(_working_directories()[:1])
    if not isinstance(store_class.__dict__.get(STORE_ROOT_ATTRIBUTE), property):
        # instances keep the value in their __dict__ under the same name, so stores made
        # before this line read exactly what they stored
        setattr(store_class, STORE_ROOT_ATTRIBUTE, property(_root, _set_root))
    _mark_known(store_class)
    found = unwrapped(DEFAULT_STORE_ASSEMBLER, _WRAPPED)
    if found is None:
        return
    module, original = found

    @functools.wraps(original)
    def assemble(*args: Any, **kwargs: Any) -> Any:
        providers = original(*args, **kwargs)
        given = kwargs.get("file_memory_store")
        for provider in providers:
            store = getattr(provider, "store", None)
            if (
                isinstance(provider, af.FileMemoryProvider)
                and store is not given
                and isinstance(store, af.FileSystemAgentFileStore)
            ):
                store.__dict__[_DEFAULT] = True
        return providers

    setattr(assemble, _WRAPPED, original)
    setattr(module, DEFAULT_STORE_ASSEMBLER[1], assemble)
