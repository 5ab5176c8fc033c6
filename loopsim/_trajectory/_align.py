"""Holding a run's trajectory to an expected one, and the aligned table a failure shows.

Modes (the run's steps compared are its tool, says and task steps, plus its host steps
when the expectation names one; ``kinds:`` narrows them, e.g. ``kinds: [tool]`` holds a
trajectory to the run's tool calls alone):

- ``exact``: the same steps in the same order, no more, no fewer;
- ``in_order``: the expected steps appear in this order, other steps may come between;
- ``any_order``: the same steps (one to one), in any order;
- ``subset``: every step the run took is one of the expected ones (each used once);
- ``superset``: every expected step is one the run took (each used once), in any order.

A failure is a table, expected against actual, one row per step, each actual step with
its virtual time, agent and iteration, and the first mismatch marked ``>>`` with its reason
(like pytest's assertion diffs: the first difference, then the context).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from ._patterns import StepPattern, TrajectorySpecError, pattern_of
from ._steps import KINDS, TrajectoryStep

__all__ = [
    "MODES",
    "Trajectory",
    "check_never",
    "check_trajectory",
    "spec_of",
    "trajectory_problems",
]

MODES = ("exact", "in_order", "any_order", "subset", "superset")
_SPEC_KEYS = ("mode", "steps", "agent", "per_iteration", "by", "after", "kinds")
MAX_ROWS = 30
LEFT = 46


@dataclass(frozen=True, slots=True)
class Trajectory:
    """An expected trajectory: steps, a mode, and what part of the run it is held to."""

    steps: tuple[StepPattern, ...]
    mode: str = "in_order"
    agent: str | None = None
    per_iteration: bool = False
    by: float | None = None
    after: float | None = None
    #: the kinds of step compared (None: tool, says, task, and host when a step names it)
    kinds: tuple[str, ...] | None = None

    @property
    def compared(self) -> frozenset[str]:
        if self.kinds is not None:
            return frozenset(self.kinds)
        named = {p.kind for p in self.steps}
        return frozenset({"tool", "says", "task"} | ({"host"} & named))

    @property
    def ordered(self) -> tuple[StepPattern, ...]:
        return tuple(s for s in self.steps if not s.counting)


def spec_of(raw: Any, *, mode: str | None = None) -> Trajectory:
    """A :class:`Trajectory` from a list of steps or a ``{mode, steps, ...}`` mapping."""
    if isinstance(raw, Trajectory):
        return raw
    if isinstance(raw, Mapping):
        for key in raw:
            if key not in _SPEC_KEYS:
                msg = f"a trajectory has no key {key!r}; its keys: {', '.join(_SPEC_KEYS)}"
                raise TrajectorySpecError(msg, (str(key),))
        given = dict(raw)
    elif isinstance(raw, Sequence) and not isinstance(raw, str):
        given = {"steps": raw}
    else:
        msg = "expected a list of steps or a mapping with steps: and mode:"
        raise TrajectorySpecError(msg)
    chosen = given.get("mode", mode or "in_order")
    if chosen not in MODES:
        msg = f"unknown mode {chosen!r}; expected one of: {', '.join(MODES)}"
        raise TrajectorySpecError(msg, ("mode",))
    steps = given.get("steps")
    if not isinstance(steps, Sequence) or isinstance(steps, str) or not steps:
        msg = "an empty trajectory checks nothing; list its steps"
        raise TrajectorySpecError(msg, ("steps",))
    patterns = [_pattern(step, index) for index, step in enumerate(steps)]
    per_iteration = given.get("per_iteration", False)
    if not isinstance(per_iteration, bool):
        raise TrajectorySpecError("expected true or false", ("per_iteration",))
    bounds = {}
    for key in ("by", "after"):
        value = given.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            msg = f"expected a number of virtual seconds, got {value!r}"
            raise TrajectorySpecError(msg, (key,))
        bounds[key] = None if value is None else float(value)
    agent = given.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise TrajectorySpecError("expected an agent name", ("agent",))
    kinds = given.get("kinds")
    if kinds is not None:
        if (
            isinstance(kinds, str)
            or not isinstance(kinds, Sequence)
            or not kinds
            or any(k not in KINDS for k in kinds)
        ):
            msg = f"expected a list of step kinds ({', '.join(KINDS)})"
            raise TrajectorySpecError(msg, ("kinds",))
        kinds = tuple(kinds)
    return Trajectory(tuple(patterns), chosen, agent, per_iteration, **bounds, kinds=kinds)


def _pattern(step: Any, index: int) -> StepPattern:
    try:
        return pattern_of(step)
    except TrajectorySpecError as exc:
        raise TrajectorySpecError(exc.args[0], ("steps", index, *exc.loc)) from None


def _scope(spec: Trajectory, steps: Sequence[TrajectoryStep]) -> list[TrajectoryStep]:
    return [
        s
        for s in steps
        if (spec.agent is None or s.agent == spec.agent)
        and (spec.by is None or s.time <= spec.by + 1e-9)
        and (spec.after is None or s.time >= spec.after - 1e-9)
    ]


def check_trajectory(spec: Trajectory, steps: Sequence[TrajectoryStep]) -> list[str]:
    """Every way ``steps`` (a run's trajectory) fails ``spec``, one message each."""
    return [message for _, message in trajectory_problems(spec, steps)]


def trajectory_problems(
    spec: Trajectory, steps: Sequence[TrajectoryStep]
) -> list[tuple[int | None, str]]:
    """(index of the expected step at fault, or None; message) for each way ``steps``
    fails ``spec`` — the index lets a scenario file point at that step's line."""
    scoped = _scope(spec, steps)
    if not spec.per_iteration:
        return _check_part(spec, scoped, "")
    # one group per iteration as it ran: a second run's iteration 1 is a group of its own
    groups: list[list[TrajectoryStep]] = []
    current: int | None = None
    for step in scoped:
        if step.iteration is None:
            continue
        if step.iteration != current or not groups:
            groups.append([])
            current = step.iteration
        groups[-1].append(step)
    if not groups:
        return [(None, "per_iteration: the run had no loop iteration to check")]
    problems: list[tuple[int | None, str]] = []
    for part in groups:
        head = part[0]
        problems += _check_part(spec, part, f"in iteration {head.iteration} (t={head.time:g}s): ")
    return problems


def _check_part(
    spec: Trajectory, scoped: Sequence[TrajectoryStep], prefix: str
) -> list[tuple[int | None, str]]:
    problems: list[tuple[int | None, str]] = []
    ordered = spec.ordered
    if ordered:
        kinds = spec.compared
        actual = [s for s in scoped if s.kind in kinds]
        problem = _MODES[spec.mode](ordered, actual)
        if problem is not None:
            at, message = problem
            where = [i for i, p in enumerate(spec.steps) if not p.counting]
            problems.append((None if at is None else where[at], prefix + message))
    for index, pattern in enumerate(spec.steps):
        if not pattern.counting:
            continue
        hits = [s for s in scoped if pattern.mismatch(s) is None]
        low, high = pattern.at_least, pattern.at_most
        if (low is not None and len(hits) < low) or (high is not None and len(hits) > high):
            bound = (
                f"between {low} and {high}"
                if low is not None and high is not None
                else (f"at least {low}" if low is not None else f"at most {high}")
            )
            shown = "".join(f"\n      {s.where():<22} {s.render()}" for s in hits[:MAX_ROWS])
            said = f"{prefix}steps[{index}]: expected {bound} step(s) matching {pattern.render()}"
            problems.append((index, f"{said}, got {len(hits)}{shown}"))
    return problems


def check_never(
    patterns: Sequence[StepPattern], steps: Sequence[TrajectoryStep]
) -> list[tuple[int, str]]:
    """(index of the forbidden step, message) for each ``never:`` step the run took."""
    found: list[tuple[int, str]] = []
    for index, pattern in enumerate(patterns):
        hits = [s for s in steps if pattern.mismatch(s) is None]
        if hits:
            shown = "".join(f"\n      >> {s.where():<22} {s.render()}" for s in hits[:MAX_ROWS])
            said = f"the run took a forbidden step ({pattern.render()}) {len(hits)} time(s):"
            found.append((index, said + shown))
    return found


# -- the modes and their tables --------------------------------------------------------------

#: a mode's verdict: None when it holds, else (expected step at fault or None, message)
_Found = tuple[int | None, str] | None
_Mode = Callable[[Sequence[StepPattern], Sequence[TrajectoryStep]], _Found]


def _actual(step: TrajectoryStep | None) -> str:
    return "" if step is None else f"{step.where():<22} {step.render()}"


def _table(rows: Sequence[tuple[str, str, str]]) -> str:
    """``mark expected | actual`` rows, the first ``>>`` row kept in view when clipped."""
    rows = list(rows)
    if len(rows) > MAX_ROWS:
        first = next((i for i, r in enumerate(rows) if r[0] == ">>"), 0)
        start = max(0, min(first - MAX_ROWS // 2, len(rows) - MAX_ROWS))
        clipped = rows[start : start + MAX_ROWS]
        if start:
            clipped.insert(0, ("", f"... {start} earlier row(s)", ""))
        if start + MAX_ROWS < len(rows):
            clipped.append(("", f"... {len(rows) - start - MAX_ROWS} later row(s)", ""))
        rows = clipped
    head = f"      {'':2} {'expected':<{LEFT}} | actual"
    lines = [head]
    for mark, left, right in rows:
        shown = left if len(left) <= LEFT else left[: LEFT - 3] + "..."
        lines.append(f"      {mark:2} {shown:<{LEFT}} | {right}".rstrip())
    return "\n".join(lines)


def _label(index: int, pattern: StepPattern) -> str:
    return f"{index + 1}. {pattern.render()}"


def _exact(expected: Sequence[StepPattern], actual: Sequence[TrajectoryStep]) -> _Found:
    rows: list[tuple[str, str, str]] = []
    first: str | None = None
    at: int | None = None
    for index, (pattern, step) in enumerate(zip_longest(expected, actual)):
        reason = None
        if pattern is None:
            reason = f"the run took a step more than the {len(expected)} expected"
        elif step is None:
            reason = f"the run ended after {len(actual)} step(s)"
        else:
            reason = pattern.mismatch(step)
        left = "" if pattern is None else _label(index, pattern)
        if reason is not None and first is None:
            first = f"step {index + 1}: {reason}"
            at = index if pattern is not None else None
            rows.append((">>", left, _actual(step)))
        else:
            rows.append(("" if reason is None else "!=", left, _actual(step)))
    if first is None:
        return None
    return at, f"trajectory (exact) does not match at {first}\n{_table(rows)}"


def _in_order(expected: Sequence[StepPattern], actual: Sequence[TrajectoryStep]) -> _Found:
    # Greedy: matching each expected step to the earliest fitting actual step never loses a
    # subsequence match a later choice would have found.
    matched: dict[int, int] = {}  # actual index -> expected index
    cursor = 0
    missing: int | None = None
    for index, pattern in enumerate(expected):
        found = next(
            (j for j in range(cursor, len(actual)) if pattern.mismatch(actual[j]) is None), None
        )
        if found is None:
            missing = index
            break
        matched[found] = index
        cursor = found + 1
    if missing is None:
        return None
    pattern = expected[missing]
    near = _nearest(pattern, actual[cursor:])
    if near is not None:
        reason = f"nearest: {near}"
    else:
        earlier = _nearest(pattern, [s for j, s in enumerate(actual) if j not in matched])
        reason = "no later step of that kind" + ("" if earlier is None else f"; earlier: {earlier}")
    rows: list[tuple[str, str, str]] = []
    for j, step in enumerate(actual):
        if j == cursor:
            rows.append((">>", _label(missing, pattern), "(not found from here on)"))
        given = matched.get(j)
        rows.append(("", "" if given is None else _label(given, expected[given]), _actual(step)))
    if cursor >= len(actual):
        rows.append((">>", _label(missing, pattern), "(not found: the run ended)"))
    rows += [
        ("", _label(i, expected[i]), "(not reached)") for i in range(missing + 1, len(expected))
    ]
    after = f" after step {missing}" if missing else ""
    return missing, (
        f"trajectory (in_order) does not match: expected step {missing + 1} "
        f"({pattern.render()}) was not found{after}; {reason}\n{_table(rows)}"
    )


def _nearest(pattern: StepPattern, actual: Sequence[TrajectoryStep]) -> str | None:
    """Why the first step of the pattern's kind (same head value if any) does not match."""
    head = pattern.fields.get(pattern.kind)
    same_kind = [s for s in actual if s.kind == pattern.kind]
    alike = [s for s in same_kind if head is not None and head.matches(s.field(pattern.kind))]
    for step in alike or same_kind:
        why = pattern.mismatch(step) or "it matches, but comes before the step it must follow"
        return f"{step.where()} {step.render()}: {why}"
    return None


def _pairing(expected: Sequence[StepPattern], actual: Sequence[TrajectoryStep]) -> dict[int, int]:
    """A largest one-to-one pairing, actual index -> expected index (augmenting paths)."""
    fits = [[j for j, s in enumerate(actual) if p.mismatch(s) is None] for p in expected]
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        place(i, set())
    return owner


def _unordered(mode: str) -> _Mode:
    want_all_expected = mode in ("any_order", "superset")
    want_all_actual = mode in ("any_order", "subset")

    def check(expected: Sequence[StepPattern], actual: Sequence[TrajectoryStep]) -> _Found:
        owner = _pairing(expected, actual)
        used = set(owner.values())
        missing = [i for i in range(len(expected)) if i not in used] if want_all_expected else []
        extra = [j for j in range(len(actual)) if j not in owner] if want_all_actual else []
        if not missing and not extra:
            return None
        rows: list[tuple[str, str, str]] = []
        marked = False
        for j, step in enumerate(actual):
            given = owner.get(j)
            if given is not None:
                rows.append(("", _label(given, expected[given]), _actual(step)))
            else:
                mark = "+" if j in extra else ""
                if j in extra and not missing and not marked:
                    mark, marked = ">>", True
                rows.append((mark, "(not expected)" if j in extra else "", _actual(step)))
        for i in missing:
            mark = ">>" if not marked else "-"
            marked = True
            near = _nearest(expected[i], actual)
            rows.append(
                (
                    mark,
                    _label(i, expected[i]),
                    "(no step matches)" if near is None else f"(none; nearest {near})",
                )
            )
        said = []
        if missing:
            said.append(f"{len(missing)} expected step(s) not taken (first: step {missing[0] + 1})")
        if extra:
            said.append(f"{len(extra)} step(s) taken that were not expected")
        at = missing[0] if missing else None
        return at, f"trajectory ({mode}) does not match: {'; '.join(said)}\n{_table(rows)}"

    return check


_MODES: dict[str, _Mode] = {
    "exact": _exact,
    "in_order": _in_order,
    "any_order": _unordered("any_order"),
    "subset": _unordered("subset"),
    "superset": _unordered("superset"),
}
