"""The ``limits:`` block: how long a scenario run may take (docs/limits.md)."""

from __future__ import annotations

from ._base import PositiveSeconds, StrictModel

#: Virtual seconds a scenario run may move time by, unless ``limits.virtual_time`` says.
DEFAULT_VIRTUAL_TIME = 365 * 86400.0
#: Real seconds a scenario run may take (the watchdog), unless ``limits.real_time`` says.
DEFAULT_REAL_TIME = 60.0
#: Virtual seconds one call of a custom evaluator may take, unless ``limits.evaluator_call``.
DEFAULT_EVALUATOR_CALL = 3600.0


class LimitsSpec(StrictModel):
    """Bounds of one run; each ends it with a located, named error. ``null``: no bound."""

    #: virtual seconds the run may move time by (a runaway ``while: sleep`` loop)
    virtual_time: PositiveSeconds | None = DEFAULT_VIRTUAL_TIME
    #: real seconds the run may take: the watchdog (busy loops, swallowed cancellation)
    real_time: PositiveSeconds | None = DEFAULT_REAL_TIME
    #: virtual seconds one ``evaluate`` call of a custom (imported) evaluator may take
    evaluator_call: PositiveSeconds | None = DEFAULT_EVALUATOR_CALL
