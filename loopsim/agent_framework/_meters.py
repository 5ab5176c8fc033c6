"""One OpenTelemetry histogram per kind, shared by every client and tool agent_framework builds.

agent_framework makes new histograms (operation duration, token usage, function
invocation duration) for each chat client and function tool it builds, through
``get_meter()``. With no meter provider set, which is the usual case in tests,
OpenTelemetry's global proxy provider keeps every meter and instrument it ever handed
out (to upgrade them once a real provider is set), so a process running thousands of
scenarios grew by about 18 meters and instruments per run, never freed (issue 26,
item 8: 93 -> 186 MB over 2,000 runs).

Instruments of one name from one provider feed the same metric stream (the SDK dedups
them by name), so handing out one shared histogram per factory and per provider changes
nothing that is recorded or exported: the factories are memoized, keyed by the current
global meter provider and observability switch, so setting a real provider later
gets fresh instruments from it.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from ._upstream import INSTRUMENT_FACTORIES

__all__ = ["share_instruments"]

_SHARED = "__loopsim_shared__"


def _shared(make: Callable[[], Any]) -> Callable[[], Any]:
    from opentelemetry import metrics  # noqa: PLC0415 - agent_framework's dependency

    made: dict[tuple[int, bool], tuple[Any, Any]] = {}

    @functools.wraps(make)
    def factory() -> Any:
        provider = metrics.get_meter_provider()
        observability = importlib.import_module("agent_framework.observability")
        enabled = bool(getattr(observability.OBSERVABILITY_SETTINGS, "ENABLED", False))
        key = (id(provider), enabled)
        found = made.get(key)
        if found is None or found[0] is not provider:
            found = (provider, make())  # the provider is kept: its id stays unique
            made[key] = found
        return found[1]

    setattr(factory, _SHARED, True)
    return factory


def share_instruments() -> None:
    """Memoize agent_framework's histogram factories (once per process; idempotent)."""
    for module_name, name in INSTRUMENT_FACTORIES:
        module = importlib.import_module(module_name)
        make = getattr(module, name)
        if not getattr(make, _SHARED, False):
            setattr(module, name, _shared(make))
