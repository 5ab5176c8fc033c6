"""Cassettes: record a real model once, replay it in CI, with pytest-recording's modes.

A cassette is a transcript file holding one test's model turns. :class:`Cassette` hands
out a chat client per agent that, depending on the record mode, answers from the file or
calls the real client and records:

=============  =====================================================================
mode           behaviour
=============  =====================================================================
``none``       replay only (the default, for CI): a missing cassette fails, saying
               how to record one; nothing touches the real client
``once``       replay when the cassette exists, otherwise record it
``new_episodes`` replay the recorded turns; requests past them go to the real client
               and are added to the cassette
``all``        always call the real client and re-record the cassette
=============  =====================================================================

The pytest fixture ``loopsim_cassette`` (option ``--loopsim-record-mode``) stores one
cassette per test in ``cassettes/<test module>/<test name>.transcript.json`` next to the
test file.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Literal, get_args

from typing_extensions import Self

from .._clients._protocol import ChatClient
from .._clients._recording import RecordedTurn, RecordingChatClient
from .._clients._replay import ReplayChatClient, turns_from_events
from .._errors import LoopsimError, ReplayMismatchError, TranscriptError
from .._files import file_in
from .._messages import ChatOptions, ChatRequest, ChatResponse, ChatResponseUpdate, Message
from ._model import Transcript, read_transcript, write_transcript

__all__ = ["RECORD_MODES", "Cassette", "CassetteMissingError", "RecordMode", "cassette_path"]

RecordMode = Literal["none", "once", "new_episodes", "all"]
RECORD_MODES: tuple[RecordMode, ...] = get_args(RecordMode)


class CassetteMissingError(LoopsimError, FileNotFoundError):
    """Record mode ``none`` and no cassette: the message says how to record one."""

    def __init__(
        self, path: Path, commands: Sequence[str] = ("pytest --loopsim-record-mode=once",)
    ) -> None:
        self.path = path
        self.commands = tuple(commands)
        super().__init__(
            f"no recording at {path} (record mode 'none' only replays); record it once "
            f"against the real model with: {' or '.join(self.commands)} "
            "(then commit the file)"
        )


def cassette_path(test_file: Path, test_name: str) -> Path:
    """``cassettes/<module>/<test>.transcript.json`` next to ``test_file``."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", test_name).strip("_") or "test"
    return file_in(test_file.parent / "cassettes" / test_file.stem, safe, ".transcript.json")


class _Episodes:
    """new_episodes: the recorded turns first; past them, the real client (recorded).

    The real client is built (``make_live``) only when a request is past the cassette.
    """

    def __init__(
        self, replay: ReplayChatClient, make_live: Callable[[], RecordingChatClient]
    ) -> None:
        self.replay = replay
        self._make_live = make_live
        self.live: RecordingChatClient | None = None
        self.exhausted = not replay.turns
        self.answered = 0  # requests the cassette answered (the one past it is not one)

    @property
    def requests(self) -> list[ChatRequest]:
        """Requests answered from the cassette, then those sent to the real client."""
        live = [] if self.live is None else self.live.requests
        return [*self.replay.requests[: self.answered], *live]

    def _live(self) -> RecordingChatClient:
        if self.live is None:
            self.live = self._make_live()
        return self.live

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        if not self.exhausted:
            try:
                response = await self.replay.get_response(messages, options=options)
            except ReplayMismatchError as exc:
                if exc.event_index is not None or self.replay.unplayed:
                    raise  # a recorded request that differs: a real divergence
                self.exhausted = True
            else:
                self.answered += 1
                return response
        return await self._live().get_response(messages, options=options)

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        if not self.exhausted and not self.replay.unplayed:
            self.exhausted = True
        stream = self._live() if self.exhausted else self.replay
        async for update in stream.get_streaming_response(messages, options=options):
            yield update
        if stream is self.replay:
            self.answered += 1


def _built(real: ChatClient | Callable[[], ChatClient]) -> ChatClient:
    """The real client: ``real`` itself, or what its factory (or ``resolve``) builds."""
    resolve = getattr(real, "resolve", None)
    if callable(resolve):  # built on first use (a scenario's `model:`): build it now and
        made: ChatClient = resolve()  # record it directly, so the recorder finds its API key
        return made
    if isinstance(real, ChatClient):
        return real
    made = real()
    if not isinstance(made, ChatClient):
        msg = f"the cassette's client factory returned {made!r}, not a loopsim ChatClient"
        raise TypeError(msg)
    return made


class Cassette:
    """One test's recording: chat clients per agent, and the file they read or write.

    Args:
        path: the cassette file (``*.transcript.json``).
        mode: a record mode (see the module docstring).
        secret_patterns: extra secret patterns for the recording clients and the write.

    Example:
        >>> import loopsim, tempfile, pathlib
        >>> from loopsim._transcript._cassette import Cassette
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.transcript.json"
        >>> live = loopsim.ScriptedChatClient(["hi"])  # stands in for a real model
        >>> with Cassette(path, "once") as cassette:  # no file yet: records
        ...     agent = loopsim.Agent(cassette.client("a", live), name="a")
        ...     loopsim.simulate(agent.run, "hello").text
        'hi'
        >>> with Cassette(path, "none") as cassette:  # replays, the model untouched
        ...     agent = loopsim.Agent(cassette.client("a", live), name="a")
        ...     loopsim.simulate(agent.run, "hello").text
        'hi'
        >>> len(live.requests)
        1
    """

    def __init__(
        self, path: str | Path, mode: RecordMode = "none", *, secret_patterns: Sequence[str] = ()
    ) -> None:
        if mode not in RECORD_MODES:
            msg = f"record mode must be one of {', '.join(RECORD_MODES)}, got {mode!r}"
            raise ValueError(msg)
        self.path = Path(path)
        self.mode: RecordMode = mode
        self.secret_patterns = tuple(secret_patterns)
        exists = self.path.exists()
        if mode == "none" and not exists:
            raise CassetteMissingError(self.path)
        self.recorded: Transcript | None = None
        if exists and mode != "all":
            try:
                self.recorded = read_transcript(self.path)
            except OSError as exc:
                problem = f"cannot read the cassette: {exc.strerror or exc}"
                raise TranscriptError(problem, path=self.path) from None
        #: True when this run calls real clients (and will write the cassette).
        self.recording = mode == "all" or (mode == "once" and not exists) or mode == "new_episodes"
        self._recorders: list[RecordingChatClient] = []
        self._replays: list[ReplayChatClient] = []
        #: recording: each agent's first client; a second one replays what it recorded
        self._first: dict[str, tuple[ReplayChatClient | None, RecordingChatClient | _Episodes]] = {}
        self._again: list[ReplayChatClient] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.finish()

    def client(self, agent_name: str, real: ChatClient | Callable[[], ChatClient]) -> ChatClient:
        """The chat client ``agent_name`` talks to in this mode (``real`` when recording).

        ``real`` is the real client, or a factory (no arguments) that builds it: mode
        ``none`` never calls the factory, ``new_episodes`` calls it only when a request is
        past the cassette, ``once`` only when there is no cassette, ``all`` always.

        While recording, a second client for the same agent (the second engine of
        ``--loopsim-engine both``) replays what the first one recorded, strictly: the real
        model is asked once, and both runs must send the same requests.
        """
        if self.recording and agent_name in self._first:
            again = ReplayChatClient(
                Transcript.from_turns(self._turns_of(*self._first[agent_name])), agent_name
            )
            self._again.append(again)
            return again
        replay = ReplayChatClient(self.recorded, agent_name) if self.recorded is not None else None
        if replay is not None:
            self._replays.append(replay)
        if not self.recording and replay is not None:
            return replay
        recorders = self._recorders

        def make_live() -> RecordingChatClient:
            live = RecordingChatClient(
                _built(real), agent_name=agent_name, secret_patterns=self.secret_patterns
            )
            recorders.append(live)
            return live

        if replay is None:
            live = make_live()
            self._first[agent_name] = (None, live)
            return live
        episodes = _Episodes(replay, make_live)
        self._first[agent_name] = (replay, episodes)
        return episodes

    @staticmethod
    def _turns_of(
        replay: ReplayChatClient | None, live: RecordingChatClient | _Episodes
    ) -> list[RecordedTurn]:
        kept = [] if replay is None else [t for t in replay.turns if t not in replay.unplayed]
        recorder = live.live if isinstance(live, _Episodes) else live
        return [*kept, *(() if recorder is None else recorder.turns)]

    def finish(self) -> None:
        """Check every recorded turn was replayed; write the cassette when recording."""
        if not self.recording:
            for replay in self._replays:
                replay.assert_all_played()
            return
        for again in self._again:
            again.assert_all_played()
        turns: list[RecordedTurn] = []
        if self.recorded is not None:
            for replay in self._replays:
                turns.extend(t for t in replay.turns if t not in replay.unplayed)
        for recorder in self._recorders:
            turns.extend(recorder.turns)
        transcript = Transcript.from_turns(turns, scenario=self.path.name.split(".")[0])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_transcript(self.path, transcript, secret_patterns=self.secret_patterns)
        except OSError as exc:
            problem = f"cannot write the cassette: {exc.strerror or exc}"
            raise TranscriptError(problem, path=self.path) from None

    @property
    def turns(self) -> list[RecordedTurn]:
        """The recorded turns in the cassette file (empty when there is none yet)."""
        if self.recorded is None:
            return []
        agents = sorted(
            {str(e.data.get("agent")) for e in self.recorded.events if e.kind == "model_request"}
        )
        return [t for a in agents for t in turns_from_events(self.recorded.events, a)]
