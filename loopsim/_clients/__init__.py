"""Chat clients: the protocol and the fakes that answer it."""

from ._function import FunctionChatClient as FunctionChatClient
from ._protocol import ChatClient as ChatClient
from ._scripted import ScriptedChatClient as ScriptedChatClient
from ._scripted import Turn as Turn
from ._scripted import split_into_updates as split_into_updates

__all__ = ["ChatClient", "FunctionChatClient", "ScriptedChatClient", "Turn", "split_into_updates"]
