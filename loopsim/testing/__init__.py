"""Testing helpers for loopsim users: Hypothesis strategies, the eight invariants, the
evaluator checker, trajectory assertions (``assert_trajectory``, ``assert_never``, the
matchers, ``trajectories``; docs/trajectories.md), and a syrupy extension for transcript
snapshots.

Example (syrupy, which ``pip install 'pytest-loopsim[test]'`` brings; the rest needs only
loopsim):
    def test_checkout(snapshot):
        transcript = run_my_loop()
        assert transcript == snapshot(
            name="checkout", extension_class=TranscriptSnapshotExtension
        )
"""

from typing import TYPE_CHECKING, Any

from .._invariants import INVARIANTS as INVARIANTS
from .._invariants import check_approval_is_last as check_approval_is_last
from .._invariants import check_background_evaluator as check_background_evaluator
from .._invariants import check_evaluator_order as check_evaluator_order
from .._invariants import check_ids_and_time as check_ids_and_time
from .._invariants import check_initial_messages as check_initial_messages
from .._invariants import check_invariants as check_invariants
from .._invariants import check_max_iterations as check_max_iterations
from .._invariants import check_restart as check_restart
from .._invariants import check_waits as check_waits
from .._trajectory import Anything as Anything
from .._trajectory import Between as Between
from .._trajectory import Contains as Contains
from .._trajectory import Equals as Equals
from .._trajectory import Matcher as Matcher
from .._trajectory import OneOf as OneOf
from .._trajectory import Regex as Regex
from .._trajectory import TrajectoryStep as TrajectoryStep
from ._checker import ALL_CHECKS as ALL_CHECKS
from ._checker import BACKGROUND_RULES as BACKGROUND_RULES
from ._checker import CHECKS as CHECKS
from ._checker import CheckResult as CheckResult
from ._checker import EvaluatorReport as EvaluatorReport
from ._checker import check_evaluator as check_evaluator
from ._checker import simulate_recorded as simulate_recorded
from ._faults import fault_sets as fault_sets
from ._strategies import DONE_MARKER as DONE_MARKER
from ._strategies import child_delays as child_delays
from ._strategies import evaluator_decisions as evaluator_decisions
from ._strategies import failures as failures
from ._strategies import loaded as loaded
from ._strategies import messages as messages
from ._strategies import restart_points as restart_points
from ._strategies import scenario_yaml as scenario_yaml
from ._strategies import scenarios as scenarios
from ._strategies import scripts as scripts
from ._trajectory import assert_never as assert_never
from ._trajectory import assert_trajectory as assert_trajectory
from ._trajectory import steps_of as steps_of
from ._trajectory import trajectories as trajectories
from ._trajectory import transcript_of as transcript_of

if TYPE_CHECKING:
    from ._snapshot import TranscriptSnapshotExtension as TranscriptSnapshotExtension


def __getattr__(name: str) -> Any:
    # syrupy is optional: import the extension (and syrupy) only when it is asked for,
    # so `loopsim run` and the strategies work on an install without the test extra.
    if name == "TranscriptSnapshotExtension":
        from ._snapshot import TranscriptSnapshotExtension  # noqa: PLC0415

        return TranscriptSnapshotExtension
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "ALL_CHECKS",
    "BACKGROUND_RULES",
    "CHECKS",
    "DONE_MARKER",
    "INVARIANTS",
    "Anything",
    "Between",
    "CheckResult",
    "Contains",
    "Equals",
    "EvaluatorReport",
    "Matcher",
    "OneOf",
    "Regex",
    "TrajectoryStep",
    "TranscriptSnapshotExtension",
    "assert_never",
    "assert_trajectory",
    "check_approval_is_last",
    "check_background_evaluator",
    "check_evaluator",
    "check_evaluator_order",
    "check_ids_and_time",
    "check_initial_messages",
    "check_invariants",
    "check_max_iterations",
    "check_restart",
    "check_waits",
    "child_delays",
    "evaluator_decisions",
    "failures",
    "fault_sets",
    "loaded",
    "messages",
    "restart_points",
    "scenario_yaml",
    "scenarios",
    "scripts",
    "simulate_recorded",
    "steps_of",
    "trajectories",
    "transcript_of",
]
