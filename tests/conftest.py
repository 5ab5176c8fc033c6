"""Shared test configuration: hypothesis profiles and the backend parameter."""

from __future__ import annotations

import contextlib
import os

import pytest
from hypothesis import HealthCheck, settings

# Imported before any in-process pytester run: pytester drops the modules a nested run
# imported, so agent_framework modules first imported there would come back as second
# copies (other classes) in later tests, and the agent_framework engine tests then fail
# by test order alone (seen under xdist after tests/plugin/test_collection.py).
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
