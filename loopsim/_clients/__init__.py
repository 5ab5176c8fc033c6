"""Chat clients: the protocol, the fakes that answer it, recording and replay."""

from ._background import BackgroundResponseChatClient as BackgroundResponseChatClient
from ._faults import ContentFilterError as ContentFilterError
from ._faults import Fault as Fault
from ._faults import ModelError as ModelError
from ._faults import ModelTimeoutError as ModelTimeoutError
from ._faults import RateLimitError as RateLimitError
from ._faults import ServerError as ServerError
from ._faults import StreamCutError as StreamCutError
from ._faults import ToolFaultError as ToolFaultError
from ._faults import When as When
from ._faulty import FaultyChatClient as FaultyChatClient
from ._faulty import faulty_tool as faulty_tool
from ._function import FunctionChatClient as FunctionChatClient
from ._protocol import ChatClient as ChatClient
from ._realtime import RealTimeChatClient as RealTimeChatClient
from ._recording import RecordedTurn as RecordedTurn
from ._recording import RecordingChatClient as RecordingChatClient
from ._replay import ReplayChatClient as ReplayChatClient
from ._replay import ReplayDriftWarning as ReplayDriftWarning
from ._scripted import ScriptedChatClient as ScriptedChatClient
from ._scripted import Turn as Turn
from ._scripted import split_into_updates as split_into_updates
from ._subclass import BaseChatClient as BaseChatClient
from ._subclass import FunctionInvocationLayer as FunctionInvocationLayer

__all__ = [
    "BackgroundResponseChatClient",
    "BaseChatClient",
    "ChatClient",
    "ContentFilterError",
    "Fault",
    "FaultyChatClient",
    "FunctionChatClient",
    "FunctionInvocationLayer",
    "ModelError",
    "ModelTimeoutError",
    "RateLimitError",
    "RealTimeChatClient",
    "RecordedTurn",
    "RecordingChatClient",
    "ReplayChatClient",
    "ReplayDriftWarning",
    "ScriptedChatClient",
    "ServerError",
    "StreamCutError",
    "ToolFaultError",
    "Turn",
    "When",
    "faulty_tool",
    "split_into_updates",
]
