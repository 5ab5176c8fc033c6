"""Trajectories: the steps a run took (tool calls, model texts, task events, host steps),
and expected trajectories held against them in five modes, with aligned failure tables.

This layer reads events (a live trace or a transcript); it knows nothing of scenario
files, which build their expectations from it.
"""

from ._align import MODES, Trajectory, check_never, check_trajectory, spec_of, trajectory_problems
from ._matchers import (
    MATCHER_KEYS,
    Anything,
    Between,
    Contains,
    Equals,
    Matcher,
    OneOf,
    Regex,
    matcher_of,
)
from ._patterns import PATTERN_KEYS, StepPattern, TrajectorySpecError, pattern_of
from ._steps import HostMark, TrajectoryStep, trajectory_of

__all__ = [
    "MATCHER_KEYS",
    "MODES",
    "PATTERN_KEYS",
    "Anything",
    "Between",
    "Contains",
    "Equals",
    "HostMark",
    "Matcher",
    "OneOf",
    "Regex",
    "StepPattern",
    "Trajectory",
    "TrajectorySpecError",
    "TrajectoryStep",
    "check_never",
    "check_trajectory",
    "matcher_of",
    "pattern_of",
    "spec_of",
    "trajectory_of",
    "trajectory_problems",
]
