"""loopsim: test and simulate agent loops without models, network or waiting.

loopsim contains a Python implementation of Microsoft Agent Framework's LoopAgent and
background agents and runs them against scripted fake chat clients on a virtual clock.

Example:
    >>> import loopsim
    >>> client = loopsim.ScriptedChatClient([loopsim.Turn("done", delay=3600)])
    >>> agent = loopsim.Agent(client, name="slow")
    >>> clock = loopsim.VirtualClock()
    >>> clock.run(agent.run, "go").text, clock.elapsed
    ('done', 3600.0)

This module only re-exports; the implementation lives in private modules.
"""

# The package is lazy (PEP 562): ``import loopsim`` (and so the pytest plugin, which
# every pytest run in an environment with loopsim loads) imports almost nothing; a
# public name imports its module on first use. A name is added in three places: the
# table ``_LAZY`` (name -> module), the ``TYPE_CHECKING`` block (so that mypy and IDEs
# see it) and ``__all__`` (sorted). tests/test_startup.py checks that the three agree.

# No ``from __future__ import annotations`` and only private names for the helpers: every
# public name of this namespace is a part of the API (tests/test_public_api.py).
import importlib as _importlib
import typing as _typing

from ._version import __version__ as __version__

if _typing.TYPE_CHECKING:
    from ._agents import Agent as Agent
    from ._agents import AgentContext as AgentContext
    from ._agents import AgentMiddleware as AgentMiddleware
    from ._agents import AgentRequestError as AgentRequestError
    from ._agents import AgentRunContext as AgentRunContext
    from ._agents import AgentSession as AgentSession
    from ._agents import BaseAgent as BaseAgent
    from ._agents import ChatResponseError as ChatResponseError
    from ._agents import ContextProvider as ContextProvider
    from ._agents import DelegatingAgent as DelegatingAgent
    from ._agents import FunctionTool as FunctionTool
    from ._agents import MiddlewareTermination as MiddlewareTermination
    from ._agents import ResponseStream as ResponseStream
    from ._agents import ServiceChatClient as ServiceChatClient
    from ._agents import SessionContext as SessionContext
    from ._agents import SupportsAgentRun as SupportsAgentRun
    from ._agents import ToolArgumentError as ToolArgumentError
    from ._agents import tool as tool
    from ._background import BackgroundAgentsProvider as BackgroundAgentsProvider
    from ._background import (
        BackgroundTaskCompletionLoopEvaluator as BackgroundTaskCompletionLoopEvaluator,
    )
    from ._background import (
        BackgroundTaskCompletionLoopEvaluatorOptions as BackgroundTaskCompletionLoopEvaluatorOptions,  # noqa: E501 - one long name
    )
    from ._background import BackgroundTaskInfo as BackgroundTaskInfo
    from ._background import BackgroundTaskStatus as BackgroundTaskStatus
    from ._background import background_tasks_running as background_tasks_running
    from ._background import background_tasks_running_message as background_tasks_running_message
    from ._clients import BackgroundResponseChatClient as BackgroundResponseChatClient
    from ._clients import BaseChatClient as BaseChatClient
    from ._clients import ChatClient as ChatClient
    from ._clients import ContentFilterError as ContentFilterError
    from ._clients import Fault as Fault
    from ._clients import FaultyChatClient as FaultyChatClient
    from ._clients import FunctionChatClient as FunctionChatClient
    from ._clients import FunctionInvocationLayer as FunctionInvocationLayer
    from ._clients import ModelError as ModelError
    from ._clients import ModelTimeoutError as ModelTimeoutError
    from ._clients import RateLimitError as RateLimitError
    from ._clients import RealTimeChatClient as RealTimeChatClient
    from ._clients import RecordedTurn as RecordedTurn
    from ._clients import RecordingChatClient as RecordingChatClient
    from ._clients import ReplayChatClient as ReplayChatClient
    from ._clients import ReplayDriftWarning as ReplayDriftWarning
    from ._clients import ScriptedChatClient as ScriptedChatClient
    from ._clients import ServerError as ServerError
    from ._clients import StreamCutError as StreamCutError
    from ._clients import ToolFaultError as ToolFaultError
    from ._clients import Turn as Turn
    from ._clients import When as When
    from ._clients import faulty_tool as faulty_tool
    from ._clock import VirtualClock as VirtualClock
    from ._clock import simulate as simulate
    from ._errors import HostedToolError as HostedToolError
    from ._errors import LoopsimError as LoopsimError
    from ._errors import RealTimeLimitError as RealTimeLimitError
    from ._errors import ReplayedModelError as ReplayedModelError
    from ._errors import ReplayMismatchError as ReplayMismatchError
    from ._errors import RunawayLoopError as RunawayLoopError
    from ._errors import ScenarioError as ScenarioError
    from ._errors import ScriptExhaustedError as ScriptExhaustedError
    from ._errors import SimulationDeadlock as SimulationDeadlock
    from ._errors import SimulationError as SimulationError
    from ._errors import SimulationLimitError as SimulationLimitError
    from ._errors import TranscriptError as TranscriptError
    from ._errors import UserCodeAbortError as UserCodeAbortError
    from ._errors import VirtualTimeLimitError as VirtualTimeLimitError
    from ._harness import DEFAULT_HARNESS_INSTRUCTIONS as DEFAULT_HARNESS_INSTRUCTIONS
    from ._harness import HarnessAgent as HarnessAgent
    from ._harness import NotSimulatedWarning as NotSimulatedWarning
    from ._harness import create_harness_agent as create_harness_agent
    from ._loop import AgentLoopMiddleware as AgentLoopMiddleware
    from ._loop import AgentModeProvider as AgentModeProvider
    from ._loop import AIJudgeLoopEvaluator as AIJudgeLoopEvaluator
    from ._loop import AIJudgeLoopEvaluatorOptions as AIJudgeLoopEvaluatorOptions
    from ._loop import CompletionMarkerLoopEvaluator as CompletionMarkerLoopEvaluator
    from ._loop import CompletionMarkerLoopEvaluatorOptions as CompletionMarkerLoopEvaluatorOptions
    from ._loop import DelegateLoopEvaluator as DelegateLoopEvaluator
    from ._loop import JudgeVerdict as JudgeVerdict
    from ._loop import LoopAgent as LoopAgent
    from ._loop import LoopAgentOptions as LoopAgentOptions
    from ._loop import LoopContext as LoopContext
    from ._loop import LoopEvaluation as LoopEvaluation
    from ._loop import LoopEvaluator as LoopEvaluator
    from ._loop import TodoCompletionLoopEvaluator as TodoCompletionLoopEvaluator
    from ._loop import TodoCompletionLoopEvaluatorOptions as TodoCompletionLoopEvaluatorOptions
    from ._loop import TodoProvider as TodoProvider
    from ._loop import todos_remaining as todos_remaining
    from ._loop import todos_remaining_message as todos_remaining_message
    from ._messages import AgentResponse as AgentResponse
    from ._messages import AgentResponseUpdate as AgentResponseUpdate
    from ._messages import ChatOptions as ChatOptions
    from ._messages import ChatRequest as ChatRequest
    from ._messages import ChatResponse as ChatResponse
    from ._messages import ChatResponseUpdate as ChatResponseUpdate
    from ._messages import DataContent as DataContent
    from ._messages import ErrorContent as ErrorContent
    from ._messages import FunctionApprovalRequestContent as FunctionApprovalRequestContent
    from ._messages import FunctionApprovalResponseContent as FunctionApprovalResponseContent
    from ._messages import FunctionCallContent as FunctionCallContent
    from ._messages import FunctionResultContent as FunctionResultContent
    from ._messages import HostedTool as HostedTool
    from ._messages import HostedToolCallContent as HostedToolCallContent
    from ._messages import HostedToolResultContent as HostedToolResultContent
    from ._messages import Message as Message
    from ._messages import TextContent as TextContent
    from ._messages import UriContent as UriContent
    from ._messages import Usage as Usage
    from ._messages import UsageContent as UsageContent
    from ._messages import hosted_call as hosted_call
    from ._messages._factory import Content as Content
    from ._scenario import LoadedScenario as LoadedScenario
    from ._scenario import Scenario as Scenario
    from ._scenario import ScenarioLimits as ScenarioLimits
    from ._scenario import ScenarioResult as ScenarioResult
    from ._scenario import ToolErrorInfo as ToolErrorInfo
    from ._scenario import load_scenario as load_scenario
    from ._scenario import run_scenario as run_scenario
    from ._transcript import Divergence as Divergence
    from ._transcript import Recorder as Recorder
    from ._transcript import Transcript as Transcript
    from ._transcript import TranscriptEvent as TranscriptEvent
    from ._transcript import TranscriptLimits as TranscriptLimits
    from ._transcript import diff_transcripts as diff_transcripts
    from ._transcript import read_transcript as read_transcript
    from ._transcript import record as record
    from ._transcript import render_mermaid as render_mermaid
    from ._transcript import render_text as render_text
    from ._transcript import render_timeline as render_timeline
    from ._transcript import write_transcript as write_transcript
    from ._transcript._cassette import Cassette as Cassette
    from ._transcript._cassette import CassetteMissingError as CassetteMissingError

#: public name -> the module (relative to this package) that defines it
_LAZY: dict[str, str] = {
    "AIJudgeLoopEvaluator": "._loop",
    "AIJudgeLoopEvaluatorOptions": "._loop",
    "Agent": "._agents",
    "AgentContext": "._agents",
    "AgentLoopMiddleware": "._loop",
    "AgentMiddleware": "._agents",
    "AgentModeProvider": "._loop",
    "AgentResponse": "._messages",
    "AgentResponseUpdate": "._messages",
    "AgentRunContext": "._agents",
    "AgentSession": "._agents",
    "AgentRequestError": "._agents",
    "ChatResponseError": "._agents",
    "BackgroundAgentsProvider": "._background",
    "BackgroundResponseChatClient": "._clients",
    "BackgroundTaskCompletionLoopEvaluator": "._background",
    "BackgroundTaskCompletionLoopEvaluatorOptions": "._background",
    "BackgroundTaskInfo": "._background",
    "BackgroundTaskStatus": "._background",
    "BaseAgent": "._agents",
    "BaseChatClient": "._clients",
    "Cassette": "._transcript._cassette",
    "CassetteMissingError": "._transcript._cassette",
    "ChatClient": "._clients",
    "ChatOptions": "._messages",
    "ChatRequest": "._messages",
    "ChatResponse": "._messages",
    "ChatResponseUpdate": "._messages",
    "CompletionMarkerLoopEvaluator": "._loop",
    "CompletionMarkerLoopEvaluatorOptions": "._loop",
    "Content": "._messages._factory",
    "ContentFilterError": "._clients",
    "ContextProvider": "._agents",
    "DEFAULT_HARNESS_INSTRUCTIONS": "._harness",
    "DataContent": "._messages",
    "DelegateLoopEvaluator": "._loop",
    "DelegatingAgent": "._agents",
    "Divergence": "._transcript",
    "ErrorContent": "._messages",
    "Fault": "._clients",
    "FaultyChatClient": "._clients",
    "FunctionApprovalRequestContent": "._messages",
    "FunctionApprovalResponseContent": "._messages",
    "FunctionCallContent": "._messages",
    "FunctionChatClient": "._clients",
    "FunctionInvocationLayer": "._clients",
    "FunctionResultContent": "._messages",
    "FunctionTool": "._agents",
    "HarnessAgent": "._harness",
    "HostedTool": "._messages",
    "HostedToolCallContent": "._messages",
    "HostedToolError": "._errors",
    "HostedToolResultContent": "._messages",
    "JudgeVerdict": "._loop",
    "LoadedScenario": "._scenario",
    "LoopAgent": "._loop",
    "LoopAgentOptions": "._loop",
    "LoopContext": "._loop",
    "LoopEvaluation": "._loop",
    "LoopEvaluator": "._loop",
    "LoopsimError": "._errors",
    "Message": "._messages",
    "MiddlewareTermination": "._agents",
    "ModelError": "._clients",
    "ModelTimeoutError": "._clients",
    "NotSimulatedWarning": "._harness",
    "RateLimitError": "._clients",
    "RealTimeChatClient": "._clients",
    "RealTimeLimitError": "._errors",
    "RecordedTurn": "._clients",
    "Recorder": "._transcript",
    "RecordingChatClient": "._clients",
    "ReplayChatClient": "._clients",
    "ReplayDriftWarning": "._clients",
    "ReplayMismatchError": "._errors",
    "ReplayedModelError": "._errors",
    "ResponseStream": "._agents",
    "RunawayLoopError": "._errors",
    "Scenario": "._scenario",
    "ScenarioError": "._errors",
    "ScenarioLimits": "._scenario",
    "ScenarioResult": "._scenario",
    "ScriptExhaustedError": "._errors",
    "ScriptedChatClient": "._clients",
    "ServerError": "._clients",
    "ServiceChatClient": "._agents",
    "SessionContext": "._agents",
    "SimulationDeadlock": "._errors",
    "SimulationError": "._errors",
    "SimulationLimitError": "._errors",
    "StreamCutError": "._clients",
    "SupportsAgentRun": "._agents",
    "TextContent": "._messages",
    "TodoCompletionLoopEvaluator": "._loop",
    "TodoCompletionLoopEvaluatorOptions": "._loop",
    "TodoProvider": "._loop",
    "ToolArgumentError": "._agents",
    "ToolErrorInfo": "._scenario",
    "ToolFaultError": "._clients",
    "Transcript": "._transcript",
    "TranscriptError": "._errors",
    "TranscriptEvent": "._transcript",
    "TranscriptLimits": "._transcript",
    "Turn": "._clients",
    "UriContent": "._messages",
    "Usage": "._messages",
    "UsageContent": "._messages",
    "UserCodeAbortError": "._errors",
    "VirtualClock": "._clock",
    "VirtualTimeLimitError": "._errors",
    "When": "._clients",
    "background_tasks_running": "._background",
    "background_tasks_running_message": "._background",
    "create_harness_agent": "._harness",
    "diff_transcripts": "._transcript",
    "faulty_tool": "._clients",
    "hosted_call": "._messages",
    "load_scenario": "._scenario",
    "read_transcript": "._transcript",
    "record": "._transcript",
    "render_mermaid": "._transcript",
    "render_text": "._transcript",
    "render_timeline": "._transcript",
    "run_scenario": "._scenario",
    "simulate": "._clock",
    "todos_remaining": "._loop",
    "todos_remaining_message": "._loop",
    "tool": "._agents",
    "write_transcript": "._transcript",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


#: While its item is true, ``dir()`` lists only the names imported so far: freezegun's scan
#: of every module for references to the real time functions (``_clock/_wall.py``) reads
#: each name that ``dir()`` lists, which would import the whole package, and no name not
#: yet imported can be such a reference.
_DIR_LOADED_ONLY = [False]


def __dir__() -> list[str]:
    if _DIR_LOADED_ONLY[0]:
        return sorted(globals())
    return sorted({*globals(), *__all__})


__all__ = [  # noqa: RUF022 - plainly sorted (a test checks it), constants among the names
    "AIJudgeLoopEvaluator",
    "AIJudgeLoopEvaluatorOptions",
    "Agent",
    "AgentContext",
    "AgentLoopMiddleware",
    "AgentMiddleware",
    "AgentModeProvider",
    "AgentRequestError",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentRunContext",
    "AgentSession",
    "BackgroundAgentsProvider",
    "BackgroundResponseChatClient",
    "BackgroundTaskCompletionLoopEvaluator",
    "BackgroundTaskCompletionLoopEvaluatorOptions",
    "BackgroundTaskInfo",
    "BackgroundTaskStatus",
    "BaseAgent",
    "BaseChatClient",
    "Cassette",
    "CassetteMissingError",
    "ChatClient",
    "ChatOptions",
    "ChatRequest",
    "ChatResponse",
    "ChatResponseError",
    "ChatResponseUpdate",
    "CompletionMarkerLoopEvaluator",
    "CompletionMarkerLoopEvaluatorOptions",
    "Content",
    "ContentFilterError",
    "ContextProvider",
    "DEFAULT_HARNESS_INSTRUCTIONS",
    "DataContent",
    "DelegateLoopEvaluator",
    "DelegatingAgent",
    "Divergence",
    "ErrorContent",
    "Fault",
    "FaultyChatClient",
    "FunctionApprovalRequestContent",
    "FunctionApprovalResponseContent",
    "FunctionCallContent",
    "FunctionChatClient",
    "FunctionInvocationLayer",
    "FunctionResultContent",
    "FunctionTool",
    "HarnessAgent",
    "HostedTool",
    "HostedToolCallContent",
    "HostedToolError",
    "HostedToolResultContent",
    "JudgeVerdict",
    "LoadedScenario",
    "LoopAgent",
    "LoopAgentOptions",
    "LoopContext",
    "LoopEvaluation",
    "LoopEvaluator",
    "LoopsimError",
    "Message",
    "MiddlewareTermination",
    "ModelError",
    "ModelTimeoutError",
    "NotSimulatedWarning",
    "RateLimitError",
    "RealTimeChatClient",
    "RealTimeLimitError",
    "RecordedTurn",
    "Recorder",
    "RecordingChatClient",
    "ReplayChatClient",
    "ReplayDriftWarning",
    "ReplayMismatchError",
    "ReplayedModelError",
    "ResponseStream",
    "RunawayLoopError",
    "Scenario",
    "ScenarioError",
    "ScenarioLimits",
    "ScenarioResult",
    "ScriptExhaustedError",
    "ScriptedChatClient",
    "ServerError",
    "ServiceChatClient",
    "SessionContext",
    "SimulationDeadlock",
    "SimulationError",
    "SimulationLimitError",
    "StreamCutError",
    "SupportsAgentRun",
    "TextContent",
    "TodoCompletionLoopEvaluator",
    "TodoCompletionLoopEvaluatorOptions",
    "TodoProvider",
    "ToolArgumentError",
    "ToolErrorInfo",
    "ToolFaultError",
    "Transcript",
    "TranscriptError",
    "TranscriptEvent",
    "TranscriptLimits",
    "Turn",
    "UriContent",
    "Usage",
    "UsageContent",
    "UserCodeAbortError",
    "VirtualClock",
    "VirtualTimeLimitError",
    "When",
    "__version__",
    "background_tasks_running",
    "background_tasks_running_message",
    "create_harness_agent",
    "diff_transcripts",
    "faulty_tool",
    "hosted_call",
    "load_scenario",
    "read_transcript",
    "record",
    "render_mermaid",
    "render_text",
    "render_timeline",
    "run_scenario",
    "simulate",
    "todos_remaining",
    "todos_remaining_message",
    "tool",
    "write_transcript",
]
