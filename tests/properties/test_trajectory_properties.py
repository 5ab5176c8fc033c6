"""A trajectory always matches itself, and any single-step edit of it fails ``exact``.

The trajectories are drawn by ``loopsim.testing.trajectories`` (tool calls with
arguments, model texts, task events over two agents) and turned into transcripts by
``transcript_of``, so the check goes through the whole path: events -> steps -> modes.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.testing import assert_trajectory, steps_of, trajectories, transcript_of


@settings(deadline=None)
@given(trajectories())
def test_a_trajectory_matches_itself_in_every_mode(steps: list[dict[str, Any]]) -> None:
    transcript = transcript_of(steps)
    assert len(steps_of(transcript)) == len(steps)
    for mode in ("exact", "in_order", "any_order", "subset", "superset"):
        assert_trajectory(transcript, steps, mode=mode)


def _changed(step: dict[str, Any], draw: st.DrawFn) -> dict[str, Any]:
    """The step with one thing it says made different (never merely left out)."""
    edited = copy.deepcopy(step)
    if "tool" in step:
        what = draw(st.sampled_from(["tool", "agent", "arg"]))
        if what == "tool":
            edited["tool"] = step["tool"] + "_x"
        elif what == "agent":
            edited["agent"] = step["agent"] + "_x"
        else:  # a different value for an argument, or one the call did not have
            args = edited.setdefault("args", {})
            name = draw(st.sampled_from([*args, "extra"]))
            args[name] = ["changed", args.get(name)]
    elif "says" in step:
        edited["says"] = step["says"] + "!"
    else:
        edited["status"] = "cleared" if step["status"] != "cleared" else "lost"
    return edited


@st.composite
def edited(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    steps = draw(trajectories())
    other = draw(trajectories(min_steps=1, max_steps=1))[0]
    kind = draw(st.sampled_from(["delete", "insert", "change", "swap"]))
    at = draw(st.integers(0, len(steps) - 1))
    changed = copy.deepcopy(steps)
    if kind == "delete" and len(steps) > 1:  # an empty trajectory is refused, not an edit
        del changed[at]
    elif kind == "delete":
        changed.append(other)
    elif kind == "insert":
        changed.insert(draw(st.integers(0, len(steps))), other)
    elif kind == "change":
        changed[at] = _changed(steps[at], draw)
    elif len(steps) < 2:
        changed.append(other)
    else:
        at = min(at, len(steps) - 2)
        changed[at], changed[at + 1] = changed[at + 1], changed[at]
        if changed == steps:  # two equal steps swapped: not an edit
            changed.append(other)
    return steps, changed


@settings(deadline=None)
@given(edited())
def test_any_single_step_edit_fails_exact(pair: tuple[list[Any], list[Any]]) -> None:
    steps, changed = pair
    transcript = transcript_of(steps)
    with pytest.raises(AssertionError, match=r"trajectory \(exact\) does not match"):
        assert_trajectory(transcript, changed, mode="exact")
