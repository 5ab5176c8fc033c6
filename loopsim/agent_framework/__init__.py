"""loopsim.agent_framework: the real agent_framework package as a loopsim engine.

Needs the optional extra: ``pip install 'pytest-loopsim[agent-framework]'`` (agent-framework-core
>=1.23,<2). ``import loopsim`` never imports agent_framework; this module does.

The contract (names stable; the scenario engine builds on them):

* :func:`as_chat_client` ``(client) -> LoopsimChatClient`` — any loopsim ChatClient
  (Scripted, Function, Replay, Recording) as a real ``agent_framework.BaseChatClient``
  with the chat-middleware, function-invocation and telemetry layers. Messages, every
  content kind, usage and options convert both ways (``_convert``); streaming works;
  ``client.requests`` shows what the real Agent sent; ``ChatOptions.agent_name`` and
  ``session_id`` name the asking agent/session when it is instrumented.
* :func:`from_chat_client` ``(af_client) -> AgentFrameworkChatClient`` — any
  agent_framework chat client as a loopsim ChatClient (e.g. behind RecordingChatClient).
* :func:`as_agent` ``(af_agent) -> AgentFrameworkAgent`` — an agent_framework agent as a
  loopsim ``SupportsAgentRun`` (run, run_stream, sessions, get_service); it instruments
  the agent. ``get_service(loopsim.BackgroundAgentsProvider)`` is a view of the agent's
  real ``BackgroundAgentsProvider`` (what ``BackgroundTaskCompletionLoopEvaluator`` reads).
* :func:`instrument` ``(af_agent) -> af_agent`` — adds loopsim's tracing middleware (the
  agent, its background child agents, the predicates of its AgentLoopMiddleware), so a
  run under ``loopsim.record``, streamed or not, yields session_created, loop_iteration_start,
  evaluator_decision, loop_stop and task_status events; model_request/response and
  tool_call/result come from the ``as_chat_client`` client. Idempotent; observes only.
* :func:`process_restart` — emits the ``process_restart`` event (the host restarting).
* :func:`check_backend` ``(backend)`` — raises :class:`EngineBackendError` (a
  ``LoopsimError`` and ``ValueError``) for anything but ``"asyncio"``; runs under trio
  raise it too.
* :data:`WORDING` — loopsim's table of model-facing sentences (``loopsim._wording``).
* Determinism: importing this module makes agent_framework's ``uuid4`` ids (session,
  agent, call, response ids) come from the running simulation's counter inside
  ``loopsim.simulate`` / ``VirtualClock.run`` / ``loopsim.record``; outside one (or in a
  thread started during one) ``uuid.uuid4()`` stays random.
* Errors agent_framework raises inside a run reach the caller unchanged in type.

Example:
    >>> import agent_framework as af
    >>> import loopsim
    >>> from loopsim.agent_framework import as_chat_client, instrument
    >>> scripted = loopsim.ScriptedChatClient(["hi"])
    >>> agent = instrument(af.Agent(client=as_chat_client(scripted), name="a"))
    >>> result, transcript = loopsim.record(agent.run, "hello")
    >>> result.text, [e.kind for e in transcript.events]
    ('hi', ['model_request', 'model_response'])
"""

from __future__ import annotations

try:
    import agent_framework as _agent_framework  # noqa: F401 - the extra must be installed
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess test
    _msg = (
        "loopsim.agent_framework needs the agent_framework package: "
        "pip install 'pytest-loopsim[agent-framework]'"
    )
    raise ImportError(_msg, name="agent_framework") from _exc

from .._wording import WORDING as WORDING
from ._agent import AgentFrameworkAgent as AgentFrameworkAgent
from ._agent import as_agent as as_agent
from ._chat_client import AgentFrameworkChatClient as AgentFrameworkChatClient
from ._chat_client import LoopsimChatClient as LoopsimChatClient
from ._chat_client import as_chat_client as as_chat_client
from ._chat_client import from_chat_client as from_chat_client
from ._convert import ConversionError as ConversionError
from ._ids import install as _install_ids
from ._isolation import install as _install_isolation
from ._meters import share_instruments as _share_instruments
from ._runtime import EngineBackendError as EngineBackendError
from ._runtime import check_backend as check_backend
from ._seam import ModelSeam as ModelSeam
from ._seam import model_seam as model_seam
from ._tracing import install_auto_instrument as _install_auto_instrument
from ._tracing import instrument as instrument
from ._tracing import process_restart as process_restart

_install_ids()
_install_isolation()
_install_auto_instrument()
_share_instruments()

__all__ = [
    "WORDING",
    "AgentFrameworkAgent",
    "AgentFrameworkChatClient",
    "ConversionError",
    "EngineBackendError",
    "LoopsimChatClient",
    "ModelSeam",
    "as_agent",
    "as_chat_client",
    "check_backend",
    "from_chat_client",
    "instrument",
    "model_seam",
    "process_restart",
]
