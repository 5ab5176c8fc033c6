"""The checks of one expectation value against what a run did: text, virtual time, usage
and trajectories (``check_block`` in ``_check`` calls them, with its ``fail`` and its
``Seen``: what the block is compared with)."""

from __future__ import annotations

from typing import Any

from .._trajectory import check_never, trajectory_problems
from ._schema import RangeSpec, ResponseExpect, StepExpect
from ._schema._expect import USAGE_KEYS, TokenCounts, UsageExpect

#: virtual seconds within which two times are the same
TOLERANCE = 1e-6


def _tokens(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, dict) else getattr(usage, key, None)
    return value if isinstance(value, int) else None


def check_usage(expected: UsageExpect, seen: Any, fail: Any) -> None:
    """The host's response's usage (the run's own sum) and each agent's, from its calls."""

    def compare(loc: tuple[str | int, ...], counts: TokenCounts, got: Any, whose: str) -> None:
        for key, wanted in counts.named():
            value = _tokens(got, key)
            ok = value is not None and (
                wanted.holds(value) if isinstance(wanted, RangeSpec) else value == wanted
            )
            if not ok:
                said = wanted.render() if isinstance(wanted, RangeSpec) else str(wanted)
                shown = "none reported" if value is None else str(value)
                fail((*loc, key), f"expected {said} {key} {whose}, got {shown}")

    compare(("expect", "usage"), expected, seen.usage, "in the host's response")
    for agent, counts in (expected.agents or {}).items():
        total: dict[str, int] = {}
        for event in seen.events:
            if event.kind == "model_response" and event.data.get("agent") == agent:
                for key in USAGE_KEYS:
                    value = _tokens(event.data.get("usage"), key)
                    if value is not None:
                        total[key] = total.get(key, 0) + value
        compare(("expect", "usage", "agents", agent), counts, total, f"over {agent}'s model calls")


def check_trajectories(expect: StepExpect, seen: Any, fail: Any) -> None:
    specs: list[tuple[tuple[str | int, ...], Any]] = []
    if expect.trajectory is not None:
        specs.append((("expect", "trajectory"), expect.trajectory))
    for index, spec in enumerate(expect.trajectories or ()):
        specs.append((("expect", "trajectories", index), spec))
    if not specs and not expect.never:
        return
    steps = seen.trajectory()
    for loc, spec in specs:
        for at, problem in trajectory_problems(spec.trajectory(), steps):
            # the line of the expected step at fault, when one is
            fail(loc if at is None else (*loc, "steps", at), problem)
    never = [p.pattern(never=True) for p in expect.never or ()]
    for index, problem in check_never(never, steps):
        fail(("expect", "never", index), problem)


def check_text(key: str, response: ResponseExpect, text: str | None, fail: Any) -> None:
    what = "the response" if key == "response" else "the surfaced messages"
    if text is None:
        fail(("expect", key), "expected a response, but no run returned one")
        return
    if response.equals is not None and text != response.equals:
        fail(("expect", key, "equals"), f"expected {what} {response.equals!r}, got {text!r}")
    position = 0
    for index, part in enumerate(response.contains or ()):
        found = text.find(part, position)
        if found < 0:
            where_found = "at all" if part not in text else "after the previous item"
            fail(
                ("expect", key, "contains", index),
                f"expected {what} to contain {part!r} ({where_found}); got {text!r}",
            )
            break
        position = found + len(part)
    for index, part in enumerate(response.not_contains or ()):
        if part in text:
            fail(
                ("expect", key, "not_contains", index),
                f"expected {what} not to contain {part!r}; got {text!r}",
            )


def check_elapsed(expected: float | RangeSpec, elapsed: float, fail: Any) -> None:
    if isinstance(expected, RangeSpec):
        if expected.min is not None and elapsed < expected.min - TOLERANCE:
            fail(
                ("expect", "elapsed", "min"),
                f"expected at least {expected.min:g}s of virtual time, got {elapsed:g}s",
            )
        if expected.max is not None and elapsed > expected.max + TOLERANCE:
            fail(
                ("expect", "elapsed", "max"),
                f"expected at most {expected.max:g}s of virtual time, got {elapsed:g}s",
            )
    elif abs(elapsed - expected) > TOLERANCE:
        fail(("expect", "elapsed"), f"expected {expected:g}s of virtual time, got {elapsed:g}s")
