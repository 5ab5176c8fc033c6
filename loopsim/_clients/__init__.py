"""Chat clients: the protocol, the fakes that answer it, recording and replay."""

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
    "BaseChatClient",
    "ChatClient",
    "FunctionChatClient",
    "FunctionInvocationLayer",
    "RealTimeChatClient",
    "RecordedTurn",
    "RecordingChatClient",
    "ReplayChatClient",
    "ReplayDriftWarning",
    "ScriptedChatClient",
    "Turn",
    "split_into_updates",
]
