"""ReplayChatClient: answers an agent's requests from a recorded transcript.

Matching is per agent and per session, on message content, never on global order
(vcrpy-style replay breaks on concurrency and on identical repeated requests): each
recorded session of the agent is a queue of turns; a live session is mapped to a
recorded one (the same id when it exists, since the same program makes the same ids),
and each live request is answered by the next turn of its session.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import anyio

from .. import _trace
from .._errors import ReplayedModelError, ReplayMismatchError
from .._messages import ChatOptions, ChatRequest, ChatResponse, Message, Usage
from ._base import FakeChatClient
from ._faults import Fault
from ._faulty import model_fault
from ._recording import ANSWER_FIELDS, RecordedTurn, call_names, dump_message, message_summary

__all__ = [
    "RecordedEvent",
    "ReplayChatClient",
    "ReplayDriftWarning",
    "comparable_message",
    "request_difference",
]


class ReplayDriftWarning(UserWarning):
    """A lenient replay answered a request that differs from the recorded one."""


class RecordedEvent(Protocol):
    """What the replay reads from a transcript event."""

    @property
    def time(self) -> float: ...
    @property
    def kind(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...


class _Recording(Protocol):
    @property
    def events(self) -> Sequence[Any]: ...


_IGNORED_KEYS = frozenset({"message_id"})


def comparable_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a JSON message a replay compares: all but ``message_id``."""
    return {k: v for k, v in message.items() if k not in _IGNORED_KEYS}


def _loopsim_id(value: str | None, kind: str) -> bool:
    # Ids loopsim's fakes stamp from the simulation's counters: a replay lets its own
    # stamping make them again so the counters advance exactly as in the recording.
    return value is not None and re.fullmatch(rf"{kind}-\d{{4,}}", value) is not None


def _recorded_a_storing_service(events: Sequence[Any], agent: str) -> bool:
    """Whether ``agent``'s recorded requests went to a service that kept the history: a
    request continuing a conversation (``conversation_id``) that holds fewer messages
    than the request before it in that session plus its answer (a client that keeps no
    history resends all of them)."""
    last: dict[Any, int] = {}
    for event in events:
        data = event.data
        if event.kind != "model_request" or data.get("agent") != agent:
            continue
        size = len(data.get("messages") or ())
        session = data.get("session")
        if "conversation_id" in data and session in last and size <= last[session]:
            return True
        last[session] = size
    return False


def turns_from_events(events: Sequence[Any], agent: str) -> list[RecordedTurn]:
    """Pair the ``model_request``/``model_response`` events of ``agent`` into turns."""
    turns: list[RecordedTurn] = []
    open_turns: dict[str | None, list[RecordedTurn]] = {}
    #: turns a fault wrapper took (it plays them again on replay; the model never saw them)
    taken: set[int] = set()
    for index, event in enumerate(events):
        if event.kind not in ("model_request", "model_response", "model_error", "fault"):
            continue
        data = event.data
        if data.get("agent") != agent:
            continue
        if event.kind == "fault":  # a fault of the agent's latest request still open
            waiting = [t for t in turns if t.response_index is None]
            if waiting:
                waiting[-1].faulted = True
                if data.get("rule"):  # a wrapper's: the model never saw this attempt
                    taken.add(id(waiting[-1]))
                else:
                    waiting[-1].faults.append(
                        {"kind": data.get("fault"), "options": dict(data.get("options") or {})}
                    )
            continue
        session = data.get("session")
        if event.kind == "model_request":
            turn = RecordedTurn(
                agent=agent,
                session=session,
                messages=list(data.get("messages") or ()),
                tools=list(data.get("tools") or ()),
                request_time=float(event.time),
                event_index=index,
                instructions=data.get("instructions"),
            )
            turns.append(turn)
            open_turns.setdefault(session, []).append(turn)
        elif event.kind == "model_error" and open_turns.get(session):
            turn = open_turns[session].pop(0)
            turn.error = f"{data.get('error') or 'Exception'}: {data.get('message') or ''}"
            turn.response_time = float(event.time)
            turn.response_index = index
        elif event.kind == "model_response" and open_turns.get(session):
            turn = open_turns[session].pop(0)
            taken.discard(id(turn))  # a retry below the agent got through to the model
            turn.response = list(data.get("messages") or ())
            turn.usage = data.get("usage")
            turn.response_id = data.get("response_id")
            for name in ANSWER_FIELDS:  # absent from older files: the defaults
                if name in data:
                    setattr(turn, name, data[name])
            turn.response_time = float(event.time)
            turn.response_index = index
    return [t for t in turns if id(t) not in taken]


class ReplayChatClient(FakeChatClient):
    """A chat client that answers ``agent_name``'s requests from a recorded transcript.

    Args:
        transcript: a :class:`~loopsim.Transcript` (anything with ``.events``).
        agent_name: whose ``model_request``/``model_response`` events to replay.
        strict: when True, a request that differs from the recorded one (roles, texts,
            tool names and arguments, call ids, offered tools) raises
            :class:`~loopsim.ReplayMismatchError` naming the first divergent event with
            both sides. When False, requests are matched per agent in order and drift is
            reported as :class:`ReplayDriftWarning`.
        replay_timing: sleep (on the virtual clock) as long as the recorded model took,
            so the replayed run has the recorded timestamps.

    Recorded turns never asked for are listed by :attr:`unplayed`;
    :meth:`assert_all_played` raises when there are any.

    Example:
        >>> import loopsim
        >>> agent = loopsim.Agent(loopsim.ScriptedChatClient(["4"]), name="calc")
        >>> transcript = loopsim.record(agent.run, "2+2?")[1]
        >>> replay = loopsim.ReplayChatClient(transcript, "calc")
        >>> loopsim.simulate(loopsim.Agent(replay, name="calc").run, "2+2?").text
        '4'
        >>> replay.assert_all_played()
    """

    def __init__(
        self,
        transcript: _Recording,
        agent_name: str,
        *,
        strict: bool = True,
        replay_timing: bool = True,
    ) -> None:
        super().__init__(f"replay:{agent_name}")
        self.agent_name = agent_name
        self.strict = strict
        self.replay_timing = replay_timing
        self.turns: tuple[RecordedTurn, ...] = tuple(
            turns_from_events(transcript.events, agent_name)
        )
        self._played: set[int] = set()
        #: per turn: how many of its scripted faults were played again
        self._faulted: dict[int, int] = {}
        # call id -> tool name over the whole recording: a request that carries only a
        # tool's result (a service-side conversation) still names the tool in a mismatch
        self._calls = call_names(*(t.response or () for t in self.turns))
        self._queues: dict[str | None, list[RecordedTurn]] = {}
        for turn in self.turns:
            self._queues.setdefault(turn.session, []).append(turn)
        self._session_map: dict[str, str | None] = {}
        self._claimed: set[str | None] = set()
        # The recording talked to a service that keeps the conversation: the replay stands
        # in for that service, so the Agent sends it only the new messages, as it sent
        # the recorded ones.
        self.STORES_BY_DEFAULT = _recorded_a_storing_service(transcript.events, agent_name)

    # -- inspection ---------------------------------------------------------------------

    @property
    def unplayed(self) -> tuple[RecordedTurn, ...]:
        """Recorded turns no request has asked for (yet)."""
        return tuple(t for t in self.turns if id(t) not in self._played)

    def assert_all_played(self) -> None:
        """Raise :class:`~loopsim.ReplayMismatchError` if a recorded turn was never asked for."""
        left = self.unplayed
        if left:
            first = left[0]
            raise ReplayMismatchError(
                self.agent_name,
                first.event_index,
                f"{len(left)} recorded turn(s) never requested, first: "
                f"session {first.session}: {first.summary}",
                "<the run ended>",
            )

    finish = assert_all_played

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Record the request and answer it from the recording (ids as recorded)."""
        request = ChatRequest(messages, options or ChatOptions())
        self.requests.append(request)
        return await self._answer(request)

    # -- matching -----------------------------------------------------------------------

    def _heads(self) -> list[RecordedTurn]:
        heads = [
            next((t for t in queue if id(t) not in self._played), None)
            for queue in self._queues.values()
        ]
        return sorted((h for h in heads if h is not None), key=lambda t: t.event_index or 0)

    def _head_of(self, session: str | None) -> RecordedTurn | None:
        queue = self._queues.get(session, ())
        return next((t for t in queue if id(t) not in self._played), None)

    def _select(
        self,
        live_session: str | None,
        live: list[dict[str, Any]],
        tools: list[str],
        instructions: str | None,
    ) -> RecordedTurn | None:
        if live_session is not None and live_session in self._session_map:
            return self._head_of(self._session_map[live_session])
        heads = self._heads()
        if not heads:
            return None
        unclaimed = [h for h in heads if h.session not in self._claimed]
        matching = [h for h in heads if _diff(h, live, tools, instructions) is None]
        chosen: RecordedTurn | None = None
        if live_session is not None and live_session in self._queues:
            own = self._head_of(live_session)
            if own is not None and live_session not in self._claimed:
                chosen = own
        if chosen is None:
            chosen = next(
                (h for h in unclaimed if h in matching),
                matching[0] if matching else (unclaimed or heads)[0],
            )
        if live_session is not None and chosen.session not in self._claimed:
            self._session_map[live_session] = chosen.session
            self._claimed.add(chosen.session)
        return chosen

    async def _answer(self, request: ChatRequest) -> ChatResponse:
        live = [dump_message(m) for m in request.messages]
        tools = list(request.options.tool_names)
        live_session = request.options.session_id  # None for a direct call: match on content
        instructions = request.options.instructions
        turn = self._select(live_session, live, tools, instructions)
        if turn is None:
            last = message_summary(live[-1]) if live else "<no messages>"
            raise ReplayMismatchError(
                self.agent_name,
                None,
                f"no further recorded turn for agent {self.agent_name!r}",
                f"a request ({len(live)} message(s), last {last})",
            )
        difference = _diff(turn, live, tools, instructions, self._calls)
        if difference is not None:
            expected, actual = difference
            where = f"t={turn.request_time:g} session {turn.session}"
            if self.strict:
                raise ReplayMismatchError(
                    self.agent_name, turn.event_index, f"{where}: {expected}", actual
                )
            warnings.warn(
                ReplayDriftWarning(
                    f"replay of agent {self.agent_name!r} drifted at event "
                    f"{turn.event_index} ({where}): recorded {expected}; live {actual}"
                ),
                stacklevel=2,
            )
        faulted = self._faulted.get(id(turn), 0)
        if faulted < len(turn.faults):  # a script's fault: played again, as it was
            self._faulted[id(turn)] = faulted + 1
            if faulted + 1 == len(turn.faults) and turn.response is None:
                self._played.add(id(turn))  # the fault was all this turn got
            spec = turn.faults[faulted]
            answer = await model_fault(
                Fault(str(spec["kind"]), **spec["options"]), model=self.agent_name
            )
            # A fault that answers (a malformed call, an empty answer) was the model's
            # answer to this turn: the recorded response is the fault's, not another.
            self._played.add(id(turn))
            return answer
        self._played.add(id(turn))
        if turn.response is None and turn.error is None:
            # The recording ended while this call was still waiting for the model: in
            # the replay it waits too (until the run ends or cancels it).
            await anyio.sleep_forever()
        if self.replay_timing and turn.response_time is not None and not turn.faulted:
            delay = turn.response_time - turn.request_time
            if delay > 0:
                await anyio.sleep(delay)
        if turn.error is not None:
            raise _replayed_error(turn.error)
        return _response_of(turn)


def _replayed_error(recorded: str) -> ReplayedModelError:
    """The recorded failure again: a ReplayedModelError named like the original class."""
    name, _, message = recorded.partition(": ")
    cls = _ERROR_CLASSES.get(name)
    if cls is None:
        cls = _ERROR_CLASSES[name] = type(name, (ReplayedModelError,), {})
    return cls(message, recorded_type=name)


_ERROR_CLASSES: dict[str, type[ReplayedModelError]] = {}


def _response_of(turn: RecordedTurn) -> ChatResponse:
    # Ids loopsim stamped from the simulation's counters are stamped again, in the same
    # order (messages, then the response), so the counters advance as they did; ids a
    # real model gave (or none at all) are kept exactly as recorded.
    messages = []
    for data in turn.response or ():
        message = Message.model_validate(data)
        if _loopsim_id(data.get("message_id"), "msg"):
            message = message.model_copy(update={"message_id": _trace.next_id("msg")})
        messages.append(message)
    response_id = turn.response_id
    if _loopsim_id(response_id, "resp"):
        response_id = _trace.next_id("resp")
    usage = None if turn.usage is None else Usage.model_validate(turn.usage)
    return ChatResponse(messages, response_id=response_id, usage=usage, **_fresh(turn))


def _fresh(turn: RecordedTurn) -> dict[str, Any]:
    """The turn's answer fields, the JSON ones copied (each replay gets its own)."""
    fields = turn.answer_fields
    for name in ("continuation_token", "additional_properties"):
        if name in fields:
            fields[name] = copy.deepcopy(fields[name])
    return fields


def _diff(
    turn: RecordedTurn,
    live: list[dict[str, Any]],
    tools: Iterable[str],
    instructions: str | None = None,
    calls: Mapping[str, str] | None = None,
) -> tuple[str, str] | None:
    """None when ``live`` asks what ``turn`` recorded, else (recorded, live) in words.

    ``calls`` (call id -> tool name) names the tool of a result whose call is not in the
    request itself."""
    recorded = turn.messages
    for index, (a, b) in enumerate(zip(recorded, live, strict=False)):
        if comparable_message(a) != comparable_message(b):
            named = {**(calls or {}), **call_names(recorded[:index], live[:index])}
            return (
                f"message[{index}] {message_summary(a, named)}",
                f"message[{index}] {message_summary(b, named)}",
            )
    if len(recorded) != len(live):
        n = min(len(recorded), len(live))
        extra_a = message_summary(recorded[n]) if len(recorded) > n else "<none>"
        extra_b = message_summary(live[n]) if len(live) > n else "<none>"
        return (
            f"{len(recorded)} message(s), message[{n}] {extra_a}",
            f"{len(live)} message(s), message[{n}] {extra_b}",
        )
    tool_list = list(tools)
    if turn.tools != tool_list:
        return f"tools {turn.tools}", f"tools {tool_list}"
    if turn.instructions != instructions:
        return f"instructions {_clip(turn.instructions)}", f"instructions {_clip(instructions)}"
    return None


def _clip(text: str | None, limit: int = 200) -> str:
    if text is None:
        return "<none>"
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


#: Public name of the request comparison (the replay verdict counts with it).
request_difference = _diff
