"""The eight global invariants of design.md, as checks over a run's recorded events.

Each ``check_*`` function takes the :class:`~loopsim._trace.Event` list of one
simulation (in emission order) and returns violation messages (empty when it holds).
:func:`check_invariants` runs all eight; the scenario runner calls it on every run and
reports each message like a failed expectation. They only read events, so they apply to
user evaluators and hand-built simulations alike.

1. Inner agent invocations <= max_iterations.
2. The caller's initial messages reach the inner agent exactly once unless fresh context
   is on (then at the start of every iteration). A request that continues a service-side
   conversation (``conversation_id``) holds only what the service has not seen: then the
   input is sent once in all. Within a run, the requests after an answer naming a
   conversation hold only what came after it, and are not counted.
3. Evaluators are asked in order; none after the first that continues; the loop stops
   (``evaluators_stopped``) only when all stop.
4. An iteration with a pending approval request is the last, and no evaluator is asked
   after it.
5. A wait returns no later than its timeout (virtual clock) and leaves running tasks
   running.
6. Only running tasks keep the background-completion evaluator going.
7. After a restart a task keeps what the serialized session recorded: recorded
   completed/failed stays so; recorded running becomes ``lost`` (never completed).
8. Transcript ids are unique; timestamps never go backwards.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._messages import FunctionApprovalRequestContent, Message
from ._trace import Event

__all__ = [
    "INVARIANTS",
    "Violation",
    "check_approval_is_last",
    "check_background_evaluator",
    "check_evaluator_order",
    "check_ids_and_time",
    "check_initial_messages",
    "check_invariants",
    "check_max_iterations",
    "check_restart",
    "check_waits",
]

WAIT_TOOL = "background_agents_wait_for_first_completion"
#: A wait reply that names a task's status (it finished, or was not running); any other
#: reply that is not an ``Error:`` is the timeout reply. Read by structure, not wording, so
#: it holds for either engine's sentences.
_STATUS_REPLY = re.compile(r"^Task \d+\b[^\n]*?\bstatus(?::| is) \w+")


def is_wait_timeout(text: str) -> bool:
    """True when ``text``, a wait tool's reply, says the wait timed out."""
    return not text.startswith("Error:") and _STATUS_REPLY.match(text) is None


TOLERANCE = 1e-6


@dataclass
class _LoopRun:
    """The events of one loop run (from its first iteration start to its stop)."""

    loop: str
    events: list[Event] = field(default_factory=list)
    stop: Event | None = None

    def iterations(self) -> dict[int, list[Event]]:
        out: dict[int, list[Event]] = {}
        current: int | None = None
        for event in self.events:
            if event.kind == "loop_iteration_start":
                current = int(event.data["iteration"])
                out[current] = []
            elif current is not None:
                out[current].append(event)
        return out


def _loop_runs(events: Sequence[Event]) -> Iterator[_LoopRun]:
    """Loop runs of any loop; events in between are attributed to the open run(s)."""
    open_runs: dict[str, _LoopRun] = {}
    for event in events:
        loop = event.data.get("loop") if event.kind.startswith(("loop_", "evaluator_")) else None
        if event.kind == "loop_iteration_start" and event.data.get("iteration") == 1:
            run = _LoopRun(str(loop))
            open_runs[str(loop)] = run
        if event.kind == "loop_stop":
            run_or_none = open_runs.pop(str(loop), None)
            if run_or_none is not None:
                run_or_none.stop = event
                yield run_or_none
            continue
        for run in open_runs.values():
            run.events.append(event)
    yield from open_runs.values()


def check_max_iterations(events: Sequence[Event], max_iterations: int | None) -> list[str]:
    """1. No loop run starts more than ``max_iterations`` iterations."""
    if max_iterations is None:
        return []
    problems: list[str] = []
    for run in _loop_runs(events):
        count = sum(1 for e in run.events if e.kind == "loop_iteration_start")
        if count > max_iterations:
            problems.append(
                Violation(
                    f"invariant 1: loop {run.loop!r} ran {count} iterations, more than "
                    f"max_iterations={max_iterations}",
                    run.stop,
                )
            )
    return problems


def _input_of(request: Event) -> Message | None:
    messages: Sequence[Any] = request.data.get("messages") or ()
    for message in reversed(messages):
        if isinstance(message, Message) and message.role == "user":
            return message
    return None


class Violation(str):  # noqa: SLOT000 - str subtypes cannot have non-empty __slots__
    """A violation message (a ``str``) that knows the event where it was seen, if any."""

    event: Event | None

    def __new__(cls, message: str, event: Event | None = None) -> Violation:  # noqa: PYI034 - Python 3.10 has no typing.Self
        made = super().__new__(cls, message)
        made.event = event
        return made


def _count(messages: Sequence[Any], wanted: Message) -> int:
    """How often ``wanted`` is in ``messages``: by message id when it has one (the same
    text sent twice is two messages), else by equality."""
    if wanted.message_id is not None:
        return sum(1 for m in messages if getattr(m, "message_id", None) == wanted.message_id)
    return sum(1 for m in messages if m == wanted)


def check_initial_messages(events: Sequence[Event], *, fresh_context: bool) -> list[str]:
    """2. The initial input is sent once (or once per iteration with fresh context)."""
    problems: list[str] = []
    for run in _loop_runs(events):
        iterations = run.iterations()
        first = [
            e
            for e in iterations.get(1, ())
            if e.kind == "model_request" and e.data.get("agent") == run.loop
        ]
        if not first:
            continue
        initial = _input_of(first[0])
        if initial is None:
            continue
        # Messages equal to the input that the history already held (only possible when
        # the input has no id, so equality is all there is to compare).
        before = 0 if initial.message_id else _count(first[0].data["messages"], initial) - 1
        for number, items in sorted(iterations.items()):
            requests = [
                e for e in items if e.kind == "model_request" and e.data.get("agent") == run.loop
            ]
            if not requests:
                continue
            if fresh_context:
                if _count(requests[0].data["messages"], initial) < 1:
                    problems.append(
                        Violation(
                            f"invariant 2: with fresh context, iteration {number} of loop "
                            f"{run.loop!r} did not start with the caller's initial messages",
                            requests[0],
                        )
                    )
                continue
            if "conversation_id" in first[0].data or any(
                "conversation_id" in r.data for r in requests
            ):
                # a service keeps the conversation: a request holds only what it has not
                # seen, so the input is sent once in all (by the loop's first request)
                sent = sum(_count(r.data["messages"], initial) for r in requests)
                if sent != (1 if number == 1 else 0):
                    problems.append(
                        Violation(
                            f"invariant 2: iteration {number} of loop {run.loop!r} sent the "
                            f"caller's initial message {sent} times to a service that keeps "
                            f"the conversation (expected {1 if number == 1 else 0})",
                            requests[0],
                        )
                    )
                continue
            for request in _whole_requests(items, run.loop):
                seen = _count(request.data["messages"], initial) - before
                if seen != 1:
                    problems.append(
                        Violation(
                            f"invariant 2: iteration {number} of loop {run.loop!r} sent the "
                            f"caller's initial message {seen} times (expected exactly once)",
                            request,
                        )
                    )
                    break
    return problems


def _whole_requests(items: Sequence[Event], agent: str) -> Iterator[Event]:
    """``agent``'s requests in one iteration that send the whole history: not those after
    an answer naming a conversation (``conversation_id``), which send only what came after
    it (upstream's tool loop: the tool results, then what later rounds add)."""
    continued = False
    for event in items:
        if event.data.get("agent") != agent:
            continue
        if event.kind == "model_response":
            continued = continued or event.data.get("conversation_id") is not None
        elif event.kind == "model_request" and not continued:
            yield event


def _first(run: _LoopRun, number: int) -> Event | None:
    """The first event of iteration ``number`` of ``run`` (where to report it)."""
    items = run.iterations().get(number)
    return items[0] if items else run.stop


def check_evaluator_order(events: Sequence[Event], evaluator_count: int | None = None) -> list[str]:
    """3. Evaluators asked in order, none after a continue, stop only when all stop.

    ``evaluator_count`` is how many evaluators the loop has. Without it, the count is read
    from the indices seen in the run (the highest index asked, plus one), which cannot
    notice an evaluator that was never asked at all; the scenario runner passes it.
    """
    problems: list[str] = []
    for run in _loop_runs(events):
        iterations = run.iterations()
        last = max(iterations, default=0)
        asked = [int(e.data["index"]) for e in run.events if e.kind == "evaluator_decision"]
        count = evaluator_count if evaluator_count is not None else max(asked, default=-1) + 1
        for number, items in sorted(iterations.items()):
            decisions = [e for e in items if e.kind == "evaluator_decision"]
            indices = [int(e.data["index"]) for e in decisions]
            if indices != list(range(len(indices))) or len(indices) > count:
                problems.append(
                    Violation(
                        f"invariant 3: iteration {number} of loop {run.loop!r} asked evaluators "
                        f"in the order {indices} (the loop has {count})",
                        _first(run, number),
                    )
                )
            for position, decision in enumerate(decisions[:-1]):
                if decision.data["decision"] == "continue":
                    problems.append(
                        Violation(
                            f"invariant 3: iteration {number} of loop {run.loop!r} asked evaluator "
                            f"{position + 1} after evaluator {position} continued",
                            _first(run, number),
                        )
                    )
                    break
            all_stop = (
                bool(decisions)
                and len(decisions) == count
                and all(d.data["decision"] == "stop" for d in decisions)
            )
            if all_stop and number != last:
                problems.append(
                    Violation(
                        f"invariant 3: loop {run.loop!r} went on after every evaluator stopped in "
                        f"iteration {number}",
                        _first(run, number),
                    )
                )
        if run.stop is not None and run.stop.data.get("reason") == "evaluators_stopped":
            decisions = [e for e in iterations.get(last, ()) if e.kind == "evaluator_decision"]
            stopped = [int(d.data["index"]) for d in decisions if d.data["decision"] == "stop"]
            if stopped != list(range(count)) or len(decisions) != count:
                problems.append(
                    Violation(
                        f"invariant 3: loop {run.loop!r} stopped as evaluators_stopped in "
                        f"iteration {last}, but only evaluators {stopped} of {count} said stop",
                        run.stop,
                    )
                )
    return problems


def _has_approval(event: Event) -> bool:
    return any(
        isinstance(c, FunctionApprovalRequestContent)
        for m in event.data.get("messages") or ()
        if isinstance(m, Message)
        for c in m.contents
    )


def check_approval_is_last(events: Sequence[Event]) -> list[str]:
    """4. A pending approval request ends the loop run; no evaluator is asked after it."""
    problems: list[str] = []
    for run in _loop_runs(events):
        iterations = run.iterations()
        for number, items in sorted(iterations.items()):
            pending = [
                i
                for i, e in enumerate(items)
                if e.kind == "model_response"
                and e.data.get("agent") == run.loop
                and _has_approval(e)
            ]
            if not pending:
                continue
            if any(e.kind == "evaluator_decision" for e in items[pending[0] :]):
                problems.append(
                    Violation(
                        f"invariant 4: loop {run.loop!r} asked an evaluator after a pending "
                        f"approval request in iteration {number}",
                        items[pending[0]],
                    )
                )
            if number != max(iterations):
                problems.append(
                    Violation(
                        f"invariant 4: loop {run.loop!r} ran another iteration after a pending "
                        f"approval request in iteration {number}",
                        items[pending[0]],
                    )
                )
    return problems


def _statuses(events: Sequence[Event]) -> Iterator[tuple[Event, dict[tuple[Any, Any], str]]]:
    """Each event with the latest status of every task (by session and id) before it."""
    status: dict[tuple[Any, Any], str] = {}
    for event in events:
        yield event, status
        if event.kind == "task_status":
            status[(event.data.get("session"), event.data.get("task_id"))] = str(
                event.data.get("status")
            )


def check_waits(events: Sequence[Event], wait_timeout: float | None) -> list[str]:
    """5. A wait returns within its timeout; a timed-out wait leaves its tasks running.

    Only tasks still running once the wait has started count: the wait's own first
    refresh (at the instant of the call) finalizes tasks that had already finished, and
    upstream then waits on the others only.
    """
    problems: list[str] = []
    started: dict[str, tuple[Event, dict[Any, str]]] = {}
    for event, status in _statuses(events):
        if event.kind == "task_status":
            for call, at_start in started.values():
                # a status set at the instant the wait began is its first refresh
                if (
                    event.time <= call.time + TOLERANCE
                    and event.data.get("session") == call.data.get("session")
                    and event.data.get("task_id") in at_start
                ):
                    at_start[event.data.get("task_id")] = str(event.data.get("status"))
        if event.kind == "tool_call" and event.data.get("name") == WAIT_TOOL:
            session = event.data.get("session")
            snapshot = {i: status.get((session, i), "unknown") for i in _wait_ids(event)}
            started[str(event.data.get("call_id"))] = (event, snapshot)
        elif event.kind == "tool_result" and event.data.get("name") == WAIT_TOOL:
            opened = started.pop(str(event.data.get("call_id")), None)
            if opened is None:
                continue
            call, at_start = opened
            waited = event.time - call.time
            if wait_timeout is not None and waited > wait_timeout + TOLERANCE:
                problems.append(
                    Violation(
                        f"invariant 5: a wait returned after {waited:g}s, later than its "
                        f"timeout of {wait_timeout:g}s",
                        event,
                    )
                )
            if is_wait_timeout(str(event.data.get("result") or "")):
                session = event.data.get("session")
                for task_id, before in at_start.items():
                    now = status.get((session, task_id))
                    if before == "running" and now is not None and now != "running":
                        problems.append(
                            Violation(
                                f"invariant 5: a wait that timed out left task {task_id} {now} "
                                "(it was running when the wait began and must stay running)",
                                event,
                            )
                        )
    return problems


def _wait_ids(call: Event) -> tuple[Any, ...]:
    return tuple((call.data.get("arguments") or {}).get("task_ids") or ())


def check_background_evaluator(events: Sequence[Event]) -> list[str]:
    """6. The background-completion evaluator continues only while a task runs."""
    problems: list[str] = []
    for event, status in _statuses(events):
        if (
            event.kind == "evaluator_decision"
            and "background_completion" in getattr(event, "marks", ())
            and event.data.get("decision") == "continue"
            and "running" not in status.values()
        ):
            problems.append(
                Violation(
                    f"invariant 6: the background-completion evaluator continued iteration "
                    f"{event.data.get('iteration')} with no task running",
                    event,
                )
            )
    return problems


def check_restart(events: Sequence[Event]) -> list[str]:
    """7. Across a restart, running records become lost; finished ones stay finished."""
    problems: list[str] = []
    recorded: dict[tuple[Any, Any], str] = {}
    at_restart: dict[tuple[Any, Any], str] | None = None
    for event in events:
        if event.kind == "process_restart":
            at_restart = dict(recorded)
            continue
        if event.kind != "task_status":
            continue
        key = (event.data.get("session"), event.data.get("task_id"))
        new = str(event.data.get("status"))
        if at_restart is not None and key in at_restart:
            before = at_restart[key]
            if before == "running" and new in ("completed", "failed"):
                problems.append(
                    Violation(
                        f"invariant 7: task {key[1]} was recorded running before the restart "
                        f"but became {new} after it (expected lost)",
                        event,
                    )
                )
            if before in ("completed", "failed") and new == "lost":
                problems.append(
                    Violation(
                        f"invariant 7: task {key[1]} was recorded {before} before the restart "
                        "and was lost after it",
                        event,
                    )
                )
        recorded[key] = new
    return problems


def check_ids_and_time(events: Sequence[Event]) -> list[str]:
    """8. Event numbers, message ids and response ids are unique; time never goes back."""
    problems: list[str] = []
    last_time = float("-inf")
    last_seq = 0
    message_ids: set[str] = set()
    response_ids: set[str] = set()
    for event in events:
        if event.seq <= last_seq:
            problems.append(
                Violation(f"invariant 8: event {event.seq} ({event.kind}) is out of order", event)
            )
        if event.time < last_time - TOLERANCE:
            problems.append(
                Violation(
                    f"invariant 8: time went back from {last_time:g}s to {event.time:g}s at event "
                    f"{event.seq} ({event.kind})",
                    event,
                )
            )
        last_seq, last_time = event.seq, max(last_time, event.time)
        if event.kind == "clock_jump":
            start = event.data.get("from", event.data.get("start"))
            end = event.data.get("to", event.data.get("end"))
            if start is not None and end is not None and end < start:
                problems.append(
                    Violation(f"invariant 8: the clock jumped back from {start} to {end}", event)
                )
        if event.kind == "model_response":
            response_id = event.data.get("response_id")
            if response_id is not None:
                if response_id in response_ids:
                    problems.append(
                        Violation(f"invariant 8: response id {response_id} was used twice", event)
                    )
                response_ids.add(str(response_id))
            for message in event.data.get("messages") or ():
                message_id = getattr(message, "message_id", None)
                if message_id is None:
                    continue
                if message_id in message_ids:
                    problems.append(
                        Violation(f"invariant 8: message id {message_id} was used twice", event)
                    )
                message_ids.add(message_id)
    return problems


INVARIANTS = (
    "max_iterations",
    "initial_messages",
    "evaluator_order",
    "approval_is_last",
    "waits",
    "background_evaluator",
    "restart",
    "ids_and_time",
)


def check_invariants(
    events: Sequence[Event],
    *,
    max_iterations: int | None = None,
    fresh_context: bool = False,
    wait_timeout: float | None = None,
    evaluator_count: int | None = None,
) -> list[str]:
    """All eight invariants; returns every violation message (empty when all hold)."""
    return [
        *check_max_iterations(events, max_iterations),
        *check_initial_messages(events, fresh_context=fresh_context),
        *check_evaluator_order(events, evaluator_count),
        *check_approval_is_last(events),
        *check_waits(events, wait_timeout),
        *check_background_evaluator(events),
        *check_restart(events),
        *check_ids_and_time(events),
    ]
