"""The replay verdict: what a replay compared, and every way the code under test diverged.

A replay answers each model call from the recording (vcrpy-style): the model's replies
and delays are the recorded ones, whatever the scenario's scripts say now. So "nothing
diverged" means *the code under test* (loop, evaluators, tools, instructions, options)
sent the same requests and made the same decisions, not that the scenario is unchanged.
The verdict says exactly that, with counts, and lists model-side changes (a script or a
delay edited since the recording) as "answered from the recording" instead of hiding
them behind "identical".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._clients._recording import RecordedTurn, message_summary
from .._clients._replay import comparable_message, turns_from_events
from .._clients._replay import request_difference as _diff
from .._errors import ReplayMismatchError
from ._diff import Divergence, diff_transcripts
from ._drift import answer_difference
from ._model import Transcript

__all__ = [
    "CASSETTE_SCOPE",
    "MODEL_KINDS",
    "ReplayVerdict",
    "Replayed",
    "compare_replay",
    "is_cassette",
]

#: The events a cassette holds: one request and its answer (or error) per model call.
MODEL_KINDS = frozenset({"model_request", "model_response", "model_error"})

#: What a replay of a cassette compares, and what it cannot see (the verdict says so).
CASSETTE_SCOPE = (
    "a cassette: compared the model calls and what the code under test sent "
    "(messages, tool results, tools, instructions); it holds no tool, loop or task "
    "events to compare"
)


def is_cassette(transcript: Transcript) -> bool:
    """True when ``transcript`` holds model calls only (a cassette), not a full run."""
    return bool(transcript.events) and all(e.kind in MODEL_KINDS for e in transcript.events)


_SHOWN = 5  # model-side notes listed before "and N more"


@dataclass(frozen=True, slots=True)
class Replayed:
    """What a re-run produced: the live transcript, the error that stopped it, and
    optionally a *fresh* run (the scenario's own models, no recording) to tell
    model-side changes apart."""

    transcript: Transcript | None
    error: BaseException | None = None
    fresh: Transcript | None = None


@dataclass(frozen=True, slots=True)
class ReplayVerdict:
    """The outcome of comparing a replay with its recording.

    Attributes:
        identical: True when nothing the code under test did differs.
        model_calls: live model calls answered from the recording.
        recorded_calls: model calls in the recording.
        live_calls: model calls the code under test made in the replay.
        same_requests: live requests equal to the recorded ones (messages, tools,
            instructions).
        delays_reused: recorded model delays (> 0 s) the replay waited again.
        divergences: one sentence per way the code under test diverged, first one first.
        model_side: model-side changes (scripts, delays) since the recording, which the
            replay answered from the recording (needs a fresh run).
        divergence: the first divergent event, both sides (None when the event streams
            match).
    """

    identical: bool
    model_calls: int
    recorded_calls: int
    live_calls: int
    same_requests: int
    delays_reused: int
    divergences: tuple[str, ...] = ()
    model_side: tuple[str, ...] = ()
    divergence: Divergence | None = field(default=None, repr=False)
    cassette: bool = False

    @property
    def compared(self) -> str:
        """The counts sentence: what was answered, sent and reused."""
        calls = _n(self.model_calls, "model call")
        if self.model_calls != self.recorded_calls:
            calls = f"{self.model_calls} of {_n(self.recorded_calls, 'recorded model call')}"
        if self.same_requests == self.live_calls:
            sent = f"the same {_n(self.live_calls, 'request')}"
        else:
            sent = f"the same request {self.same_requests} time(s) out of {self.live_calls}"
        return (
            f"{calls} answered from the recording; the code under test sent {sent}; "
            f"{_n(self.delays_reused, 'recorded delay')} reused"
        )

    @property
    def text(self) -> str:
        """The report ``loopsim replay`` prints."""
        lines: list[str] = []
        if self.identical:
            lines.append(f"identical: {self.compared}")
        else:
            lines.append(f"diverged: {self.divergences[0]}")
            lines.extend(f"  also: {d}" for d in self.divergences[1:])
            lines.append(f"compared: {self.compared}")
        if self.cassette:
            lines.append(f"recording: {CASSETTE_SCOPE}")
        if self.model_side:
            lines.append(
                "answered from the recording, though the scenario's model side now differs "
                "(a replay never uses it):"
            )
            lines.extend(f"  - {note}" for note in self.model_side[:_SHOWN])
            if len(self.model_side) > _SHOWN:
                lines.append(f"  - and {len(self.model_side) - _SHOWN} more")
        text = "\n".join(lines) + "\n"
        if self.divergence is not None and not self.identical:
            text += "\n" + self.divergence.text
        return text

    def __str__(self) -> str:
        return self.text


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


# -- pairing turns -------------------------------------------------------------------------


def _agents(*transcripts: Transcript | None) -> list[str]:
    names: set[str] = set()
    for transcript in transcripts:
        if transcript is None:
            continue
        names.update(
            e.data["agent"]
            for e in transcript.events
            if e.kind == "model_request" and isinstance(e.data.get("agent"), str)
        )
    return sorted(names)


def _by_session(turns: Sequence[RecordedTurn]) -> dict[Any, list[RecordedTurn]]:
    out: dict[Any, list[RecordedTurn]] = {}
    for turn in turns:
        out.setdefault(turn.session, []).append(turn)
    return out


@dataclass
class _Pairs:
    pairs: list[tuple[RecordedTurn, RecordedTurn]] = field(default_factory=list)
    only_recorded: list[RecordedTurn] = field(default_factory=list)
    only_live: list[RecordedTurn] = field(default_factory=list)


def _pair(recorded: Transcript, live: Transcript) -> _Pairs:
    out = _Pairs()
    for agent in _agents(recorded, live):
        old = _by_session(turns_from_events(recorded.events, agent))
        new = _by_session(turns_from_events(live.events, agent))
        for session in [*old, *(s for s in new if s not in old)]:
            a, b = old.get(session, []), new.get(session, [])
            out.pairs.extend(zip(a, b, strict=False))
            out.only_recorded.extend(a[len(b) :])
            out.only_live.extend(b[len(a) :])
    out.only_recorded.sort(key=lambda t: t.event_index or 0)
    out.only_live.sort(key=lambda t: t.event_index or 0)
    return out


def _where(turn: RecordedTurn) -> str:
    return f"agent {turn.agent} session {turn.session}"


# -- what the code under test decided --------------------------------------------------------


def _tools(transcript: Transcript) -> list[tuple[Any, ...]]:
    return [
        (e.data.get("agent"), e.data.get("name"), repr(e.data.get("arguments")))
        for e in transcript.events
        if e.kind == "tool_call"
    ]


def _decisions(transcript: Transcript) -> list[tuple[Any, ...]]:
    return [
        (
            e.data.get("loop"),
            e.data.get("iteration"),
            e.data.get("index"),
            e.data.get("evaluator"),
            e.data.get("decision"),
        )
        for e in transcript.events
        if e.kind == "evaluator_decision"
    ]


def _stops(transcript: Transcript) -> dict[str, tuple[Any, Any]]:
    out: dict[str, tuple[Any, Any]] = {}
    for e in transcript.events:
        if e.kind == "loop_stop":
            out[str(e.data.get("loop"))] = (e.data.get("iterations"), e.data.get("reason"))
    return out


def _statuses(transcript: Transcript) -> dict[tuple[str, str], tuple[Any, Any]]:
    out: dict[tuple[str, str], tuple[Any, Any]] = {}
    for e in transcript.events:
        if e.kind == "task_status":
            key = (str(e.data.get("session")), str(e.data.get("task_id")))
            out[key] = (e.data.get("agent"), e.data.get("status"))
    return out


def _first_difference(a: Sequence[Any], b: Sequence[Any]) -> int | None:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


def _show(items: Sequence[tuple[Any, ...]], index: int, fmt: str) -> str:
    if index >= len(items):
        return "nothing"
    return fmt.format(*items[index])


def _decided(recorded: Transcript, live: Transcript, *, prefix_only: bool = False) -> list[str]:
    """Differences in tools called, loop decisions, iteration counts and task statuses.

    ``prefix_only`` (a replay that stopped early): compare the decisions made so far.
    """
    problems: list[str] = []
    if prefix_only:
        a, b = _decisions(recorded), _decisions(live)
        n = min(len(a), len(b))
        at = _first_difference(a[:n], b[:n])
        if at is not None:
            fmt = "loop {0} iteration {1} evaluator {2} {3}: {4}"
            problems.append(
                f"loop decisions differ: decision {at + 1}: recorded {_show(a, at, fmt)}, "
                f"live {_show(b, at, fmt)}"
            )
        return problems
    a, b = _tools(recorded), _tools(live)
    at = _first_difference(a, b)
    if at is not None:
        fmt = "{0} called {1}({2})"
        problems.append(
            f"the code under test calls other tools: tool call {at + 1}: recorded "
            f"{_show(a, at, fmt)}, live {_show(b, at, fmt)}"
        )
    a, b = _decisions(recorded), _decisions(live)
    at = _first_difference(a, b)
    if at is not None:
        fmt = "loop {0} iteration {1} evaluator {2} {3}: {4}"
        problems.append(
            f"loop decisions differ: decision {at + 1}: recorded {_show(a, at, fmt)}, "
            f"live {_show(b, at, fmt)}"
        )
    old, new = _stops(recorded), _stops(live)
    problems.extend(
        f"iteration counts differ: loop {loop} recorded {_stop(old.get(loop))}, "
        f"live {_stop(new.get(loop))}"
        for loop in sorted(set(old) | set(new))
        if old.get(loop) != new.get(loop)
    )
    old_tasks, new_tasks = _statuses(recorded), _statuses(live)
    problems.extend(
        f"task statuses differ: task {key[1]} (session {key[0]}) recorded "
        f"{_status(old_tasks.get(key))}, live {_status(new_tasks.get(key))}"
        for key in sorted(set(old_tasks) | set(new_tasks))
        if old_tasks.get(key) != new_tasks.get(key)
    )
    return problems


def _stop(stop: tuple[Any, Any] | None) -> str:
    return "no stop" if stop is None else f"{stop[0]} iteration(s) ({stop[1]})"


def _status(status: tuple[Any, Any] | None) -> str:
    return "no such task" if status is None else f"{status[1]} ({status[0]})"


# -- the model side ----------------------------------------------------------------------------


def _answer(turn: RecordedTurn) -> str:
    if turn.error is not None:
        return f"error {turn.error}"
    if turn.response is None:
        return "no answer"
    return " | ".join(message_summary(m) for m in turn.response) or "<empty>"


def _model_side(recorded: Transcript, fresh: Transcript) -> list[str]:
    notes: list[str] = []
    pairs = _pair(recorded, fresh)
    for rec, now in sorted(pairs.pairs, key=lambda p: (p[0].request_time, p[0].event_index or 0)):
        turn = f"agent {rec.agent} at t={rec.request_time:g}"
        old = [comparable_message(m) for m in rec.response or ()]
        new = [comparable_message(m) for m in now.response or ()]
        differs = answer_difference(rec, now)
        if old != new or rec.error != now.error:
            notes.append(
                f"{turn}: the scenario's model now answers {_answer(now)} "
                f"(recorded: {_answer(rec)})"
            )
        elif differs is not None:
            notes.append(
                f"{turn}: the scenario's model now answers with {differs[0]} {differs[2]} "
                f"(recorded: {differs[1]})"
            )
        elif abs(rec.delay - now.delay) > 1e-9:
            notes.append(
                f"{turn}: the scenario's model now takes {now.delay:g} s "
                f"(recorded: {rec.delay:g} s)"
            )
    if pairs.only_live:
        notes.append(
            f"the scenario's models now answer {_n(len(pairs.only_live), 'more call')} "
            f"(first: {_where(pairs.only_live[0])})"
        )
    if pairs.only_recorded:
        notes.append(
            f"the scenario's models now answer {_n(len(pairs.only_recorded), 'call')} fewer "
            f"(first missing: {_where(pairs.only_recorded[0])})"
        )
    return notes


# -- the verdict -------------------------------------------------------------------------------


def _from_error(error: BaseException) -> str:
    if isinstance(error, ReplayMismatchError):
        if error.event_index is None:
            return (
                f"more model calls than recorded: agent {error.agent} made {error.actual} "
                f"with {error.expected}"
            )
        return (
            f"a request differs: agent {error.agent} at recorded event {error.event_index}: "
            f"recorded {error.expected}; live {error.actual}"
        )
    return f"the replayed run failed: {type(error).__name__}: {error}"


def compare_replay(recorded: Transcript, replayed: Replayed | Transcript) -> ReplayVerdict:
    """Compare a replay with its recording: counts, divergences, model-side notes.

    Example:
        >>> import loopsim
        >>> from loopsim._transcript._verdict import compare_replay
        >>> agent = loopsim.Agent(loopsim.ScriptedChatClient(["4"]), name="calc")
        >>> recorded = loopsim.record(agent.run, "2+2?")[1]
        >>> replay = loopsim.Agent(loopsim.ReplayChatClient(recorded, "calc"), name="calc")
        >>> verdict = compare_replay(recorded, loopsim.record(replay.run, "2+2?")[1])
        >>> verdict.identical, verdict.model_calls, verdict.same_requests
        (True, 1, 1)
        >>> verdict.compared.split("; ")[0]
        '1 model call answered from the recording'
    """
    if isinstance(replayed, Transcript):
        replayed = Replayed(replayed)
    live = replayed.transcript or Transcript()
    cassette = is_cassette(recorded)
    if cassette:  # compare what a cassette records: the model calls
        live = _model_calls(live, recorded)
    pairs = _pair(recorded, live)
    answered = [(a, b) for a, b in pairs.pairs if b.response is not None or b.error is not None]
    same = sum(1 for a, b in pairs.pairs if _diff(a, b.messages, b.tools, b.instructions) is None)
    reused = sum(1 for a, b in answered if a.delay > 0 and abs(a.delay - b.delay) <= 1e-9)
    live_calls = len(pairs.pairs) + len(pairs.only_live)
    problems: list[str] = []
    if replayed.error is not None:
        problems.append(_from_error(replayed.error))
        # The replay stopped there; what it decided up to that point still counts.
        if not cassette:
            problems.extend(_decided(recorded, live, prefix_only=True))
    else:
        for a, b in pairs.pairs:
            difference = _diff(a, b.messages, b.tools, b.instructions)
            if difference is not None:
                problems.append(
                    f"a request differs: {_where(a)} at recorded event {a.event_index}: "
                    f"recorded {difference[0]}; live {difference[1]}"
                )
                break
        for a, b in pairs.pairs:
            if a.response is None or b.response is None:
                continue
            differs = answer_difference(a, b)
            if differs is not None:
                name, was, now = differs
                problems.append(
                    f"an answer differs from the recording: {_where(a)} at recorded event "
                    f"{a.response_index}: {name} recorded {was}; live {now}"
                )
                break
        if pairs.only_live:
            problems.append(
                f"more model calls than recorded: {len(pairs.only_live)} call(s) the "
                f"recording has no turn for (first: {_where(pairs.only_live[0])}: "
                f"{pairs.only_live[0].summary})"
            )
        if pairs.only_recorded:
            first = pairs.only_recorded[0]
            problems.append(
                f"fewer model calls than recorded: {len(pairs.only_recorded)} recorded "
                f"turn(s) never requested (first: {_where(first)}: {first.summary})"
            )
        if not cassette:
            problems.extend(_decided(recorded, live))
    divergence = None if cassette else diff_transcripts(recorded, live)
    if divergence is not None and not problems:
        kind = divergence.expected or divergence.actual
        problems.append(
            f"the transcripts differ at event {divergence.index} "
            f"({kind.kind if kind is not None else '?'})"
        )
    # Model-side notes only make sense when the code under test matched: otherwise the
    # fresh run differs because of the divergence itself.
    model_side = (
        _model_side(recorded, replayed.fresh) if replayed.fresh is not None and not problems else []
    )
    return ReplayVerdict(
        identical=not problems,
        model_calls=len(answered),
        recorded_calls=len(pairs.pairs) + len(pairs.only_recorded),
        live_calls=live_calls,
        same_requests=same,
        delays_reused=reused,
        divergences=tuple(problems),
        model_side=tuple(model_side),
        divergence=divergence,
        cassette=cassette,
    )


def _model_calls(live: Transcript, recorded: Transcript) -> Transcript:
    """The live run's model events, with the recording's header (what a cassette holds)."""
    return recorded.model_copy(update={"events": [e for e in live.events if e.kind in MODEL_KINDS]})
