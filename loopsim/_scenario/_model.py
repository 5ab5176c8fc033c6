"""``model: "module:function"``: an agent of a scenario that talks to a real model.

The function is imported like ``factory:`` and ``module:Class`` evaluators (see
``_imports``) and called with one argument, the agent's name; it returns a chat client:

* a loopsim :class:`~loopsim.ChatClient` (``get_response`` and
  ``get_streaming_response``), used as it is;
* an agent_framework chat client (``get_response(messages, stream=...)``), which is
  put behind :func:`loopsim.agent_framework.from_chat_client` and a
  :class:`~loopsim.RealTimeChatClient`, so its HTTP requests run in real time while the
  scenario runs on the virtual clock. An async ``close()`` of the client (or of its
  ``client`` attribute, as the OpenAI clients hold the SDK's) runs at the end of the run.

:class:`ModelClient` calls the function only when a request reaches it (or a recording
cassette asks for the real client with :meth:`ModelClient.resolve`): a scenario that
replays from its cassette never calls it, so CI needs no key and no network.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .._clients import ChatClient, RealTimeChatClient
from .._errors import ScenarioError
from .._files import file_in
from .._messages import ChatOptions, ChatRequest, ChatResponse, ChatResponseUpdate, Message
from .._transcript._cassette import Cassette, CassetteMissingError
from ._imports import UserCodeError, import_object
from ._schema import Scenario, describe
from ._source import LoadedScenario, Located

__all__ = ["ModelClient", "cassette_path", "model_agents", "model_errors", "replay_cassette"]

EXPECTED_CALLABLE = "module:function of a function(agent_name) that returns a chat client"
INSTALL = "pip install 'pytest-loopsim[agent-framework]'"


def cassette_path(loaded: LoadedScenario) -> Path | None:
    """``cassettes/<scenario name>.transcript.json`` next to the scenario's file (None for
    a scenario not read from a file)."""
    if loaded.where.path is None:
        return None
    return file_in(loaded.where.path.parent / "cassettes", loaded.name, ".transcript.json")


def replay_cassette(loaded: LoadedScenario) -> Cassette | None:
    """For a scenario with a real model run without ``models=``: its cassette, replayed
    only (record mode ``none``), so that running it never reaches the real model. None for
    a scripted scenario. A missing cassette is a :class:`CassetteMissingError` saying how
    to record it."""
    if not model_agents(loaded.scenario):
        return None
    target = cassette_path(loaded)
    if target is None:
        msg = (
            "this scenario talks to a real model (model:) and was not read from a file, so "
            "it has no cassette: pass models= (a loopsim Cassette's client) to run it"
        )
        raise ScenarioError(msg)
    shown = loaded.where.path
    commands = (f"loopsim run --loopsim-record-mode=once {shown}",)
    if not target.exists():
        raise CassetteMissingError(target, commands)
    return Cassette(target, "none")


def model_agents(scenario: Scenario) -> list[str]:
    """The agents of ``scenario`` that talk to a real model (``model:``), in file order."""
    return [name for name, spec in scenario.agents.items() if spec.model is not None]


def _takes_one_argument(target: Any) -> bool:
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return True  # no signature to check against (a builtin): the call will tell
    try:
        signature.bind("agent")
    except TypeError:
        return False
    return True


def _callable(
    import_path: str, loc: tuple[str | int, ...], where: Located, folders: Sequence[Path]
) -> Callable[[str], Any]:
    """The function ``import_path`` names, checked to take the agent's name."""
    try:
        target = import_object(import_path, folders)
    except UserCodeError as exc:
        raise where.error(loc, str(exc), expected=EXPECTED_CALLABLE) from None
    if not callable(target):
        raise where.error(
            loc,
            f"{import_path} is {type(target).__name__}, not a function",
            expected=EXPECTED_CALLABLE,
        )
    if not _takes_one_argument(target):
        raise where.error(
            loc,
            f"{import_path} cannot be called with one argument (the agent's name)",
            expected=EXPECTED_CALLABLE,
        )
    function: Callable[[str], Any] = target
    return function


def model_errors(
    scenario: Scenario, where: Located, folders: Sequence[Path]
) -> Iterator[ScenarioError]:
    """Problems of the ``model:`` agents: an import that fails, a function that does not
    take the agent's name, a ``vary:`` block (one cassette cannot answer its draws)."""
    for name in model_agents(scenario):
        spec = scenario.agents[name]
        assert spec.model is not None  # noqa: S101 - model_agents picks these
        loc: tuple[str | int, ...] = ("agents", name, "model")
        try:
            _callable(spec.model, loc, where, folders)
        except ScenarioError as exc:
            yield exc
        if scenario.vary:
            yield where.error(
                loc,
                "a scenario with a real model replays one recording (its cassette), so it "
                "cannot have `vary:` draws",
                expected="`model:` without `vary:`, or a script or policy",
            )


def _is_loopsim_client(client: Any) -> bool:
    return callable(getattr(client, "get_response", None)) and callable(
        getattr(client, "get_streaming_response", None)
    )


def _closer(client: Any) -> Callable[[], Awaitable[Any]] | None:
    """An async ``close``/``aclose`` of the vendor client or of the SDK client it holds."""
    for owner in (client, getattr(client, "client", None)):
        for name in ("close", "aclose"):
            method = getattr(owner, name, None)
            if callable(method) and inspect.iscoroutinefunction(method):
                closer: Callable[[], Awaitable[Any]] = method
                return closer
    return None


class ModelClient:
    """A ``model:`` agent's real model: the user's function, called on first use.

    Args:
        name: the agent's name (the function's argument).
        import_path: ``module:function``.
        where: the scenario's located source (errors name ``agents.<name>.model``).
        folders: where the module is imported from.
    """

    def __init__(
        self, name: str, import_path: str, where: Located, folders: Sequence[Path]
    ) -> None:
        self.name = name
        self.import_path = import_path
        self.where = where
        self.folders = tuple(folders)
        #: Every request received (messages, options), like the fakes' ``requests``.
        self.requests: list[ChatRequest] = []
        #: How many times the user's function was called (0 or 1).
        self.calls = 0
        self._client: ChatClient | None = None
        self._real_time: RealTimeChatClient | None = None

    def __repr__(self) -> str:
        return f"ModelClient({self.name!r}, {self.import_path!r})"

    @property
    def _loc(self) -> tuple[str | int, ...]:
        return ("agents", self.name, "model")

    def resolve(self) -> ChatClient:
        """The chat client the function returns (called once), adapted for loopsim."""
        if self._client is not None:
            return self._client
        function = _callable(self.import_path, self._loc, self.where, self.folders)
        self.calls += 1
        try:
            made = function(self.name)
        except Exception as exc:  # user code: a located report, the cause kept
            raise self.where.error(
                self._loc,
                f"{self.import_path}({self.name!r}) raised {type(exc).__name__}: {exc}",
                expected=EXPECTED_CALLABLE,
            ) from exc
        self._client = self._adapt(made)
        return self._client

    def _adapt(self, made: Any) -> ChatClient:
        if _is_loopsim_client(made):
            client: ChatClient = made
            return client
        if not callable(getattr(made, "get_response", None)):
            raise self.where.error(
                self._loc,
                f"{self.import_path}({self.name!r}) returned {describe(made)}, not a chat "
                "client (a loopsim ChatClient or an agent_framework chat client)",
                expected=EXPECTED_CALLABLE,
            )
        try:
            from ..agent_framework import from_chat_client  # noqa: PLC0415 - the optional extra
        except ImportError as exc:
            raise self.where.error(
                self._loc,
                f"{self.import_path}({self.name!r}) returned an agent_framework chat client, "
                f"which needs loopsim's agent_framework extra ({exc}); install it with: {INSTALL}",
                expected=EXPECTED_CALLABLE,
            ) from None
        self._real_time = RealTimeChatClient(
            from_chat_client(made, name=self.name), close=_closer(made)
        )
        return self._real_time

    async def aclose(self) -> None:
        """Close the real-time client made for an agent_framework client (if one was)."""
        real_time, self._real_time = self._real_time, None
        if real_time is not None:
            await real_time.aclose()

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """The real model's answer."""
        self.requests.append(ChatRequest(list(messages), options or ChatOptions()))
        return await self.resolve().get_response(messages, options=options)

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """The real model's stream."""
        self.requests.append(ChatRequest(list(messages), options or ChatOptions()))
        async for update in self.resolve().get_streaming_response(messages, options=options):
            yield update
