"""Shared test configuration: hypothesis profiles and the backend parameter."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

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
