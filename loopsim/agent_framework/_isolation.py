"""What agent_framework writes to disk by default goes to the simulation's own folder.

The one default of the installed package that writes files is the harness's file memory:
``create_harness_agent`` without ``file_memory_store`` builds a
``FileSystemAgentFileStore(Path.cwd() / "agent-file-memory")``. Run twice in one folder,
a program's second run would read the memories its first run wrote (and a test suite
would leave the folder behind). So, once :func:`install` has run (importing
``loopsim.agent_framework`` does it):

* a store that ``create_harness_agent`` made as that default is marked, and while a
  simulation runs its root is ``agent-file-memory`` inside the simulation's temporary
  folder (:func:`loopsim._scratch.simulation_folder`), removed when the run ends. Outside
  a simulation it is the folder upstream chose, unchanged; a harness built before the
  run and run inside it is redirected too;
* a store the user builds or passes (``file_memory_store=``, ``file_access_store=``) is
  theirs: its root is used as given, in a simulation as in production;
* the working directory is never changed (no ``os.chdir``).

The model never sees the root: the memory tools and the memory index name files relative
to it, so requests read the same as in production.

Mechanics: ``_root_path`` (where the store keeps its resolved root) becomes a property of
``FileSystemAgentFileStore`` that returns the stored value, except for marked stores in a
simulation. Nothing is subclassed, so the store's type and upstream's
``ExperimentalWarning`` stay as they are.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import Any

import agent_framework as af

from .._scratch import simulation_folder
from ._upstream import DEFAULT_STORE_ASSEMBLER, STORE_ROOT_ATTRIBUTE

__all__ = ["install"]

#: Set on a store ``create_harness_agent`` made as its default (True).
_DEFAULT = "_loopsim_default_store"
_WRAPPED = "__loopsim_wrapped__"


def _root(store: Any) -> Path:
    root: Path = store.__dict__[STORE_ROOT_ATTRIBUTE]
    if store.__dict__.get(_DEFAULT, False):
        folder = simulation_folder()
        if folder is not None:
            return folder / root.name
    return root


def _set_root(store: Any, value: Path) -> None:
    store.__dict__[STORE_ROOT_ATTRIBUTE] = value


def install() -> None:
    """Redirect the harness's default file-memory store inside simulations (idempotent)."""
    store_class: Any = af.FileSystemAgentFileStore
    if not isinstance(store_class.__dict__.get(STORE_ROOT_ATTRIBUTE), property):
        # instances keep the value in their __dict__ under the same name, so stores made
        # before this line read exactly what they stored
        setattr(store_class, STORE_ROOT_ATTRIBUTE, property(_root, _set_root))
    module_name, function_name = DEFAULT_STORE_ASSEMBLER
    module = importlib.import_module(module_name)
    original = getattr(module, function_name)
    if getattr(original, _WRAPPED, None) is not None:
        return

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
    setattr(module, function_name, assemble)
