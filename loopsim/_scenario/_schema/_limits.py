"""The ``limits:`` block: how long a scenario run may take (docs/limits.md)."""

from __future__ import annotations

from loopsim._clock import DEFAULT_MODEL_CALLS, DEFAULT_STEPS_PER_INSTANT

from ._base import PositiveCount, PositiveSeconds, StrictModel

#: Virtual seconds a scenario run may move time by, unless ``limits.virtual_time`` says.
DEFAULT_VIRTUAL_TIME = 365 * 86400.0
#: Real seconds a scenario run may take (the watchdog), unless ``limits.real_time`` says.
DEFAULT_REAL_TIME = 60.0
#: Virtual seconds one call of a custom evaluator may take, unless ``limits.evaluator_call``.
DEFAULT_EVALUATOR_CALL = 3600.0
#: Steps at one virtual instant (``limits.steps_per_instant``) and model calls in all
#: (``limits.model_calls``) a scenario run may make: the same bounds as in Python.
DEFAULT_SCENARIO_STEPS = DEFAULT_STEPS_PER_INSTANT
DEFAULT_SCENARIO_CALLS = DEFAULT_MODEL_CALLS


class LimitsSpec(StrictModel):
    """Bounds of one run; each ends it with a located, named error. ``null``: no bound."""

    #: virtual seconds the run may move time by (a runaway ``while: sleep`` loop)
    virtual_time: PositiveSeconds | None = DEFAULT_VIRTUAL_TIME
    #: real seconds the run may take: the watchdog (busy loops, swallowed cancellation)
    real_time: PositiveSeconds | None = DEFAULT_REAL_TIME
    #: virtual seconds one ``evaluate`` call of a custom (imported) evaluator may take
    evaluator_call: PositiveSeconds | None = DEFAULT_EVALUATOR_CALL
    #: steps (event-loop callbacks, task steps) at one virtual instant: a runaway loop
    #: that never lets virtual time move
    steps_per_instant: PositiveCount | None = DEFAULT_SCENARIO_STEPS
    #: model calls of all agents together: a runaway loop against a model that answers
    #: at once
    model_calls: PositiveCount | None = DEFAULT_SCENARIO_CALLS
