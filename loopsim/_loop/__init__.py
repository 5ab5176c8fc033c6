"""LoopAgent, its evaluators and the AgentLoopMiddleware adapter."""

from ._agent import LoopAgent, LoopAgentOptions
from ._evaluation import FeedbackView, LoopContext, LoopEvaluation, LoopEvaluator
from ._evaluators import (
    AIJudgeLoopEvaluator,
    AIJudgeLoopEvaluatorOptions,
    CompletionMarkerLoopEvaluator,
    CompletionMarkerLoopEvaluatorOptions,
    DelegateLoopEvaluator,
    JudgeVerdict,
)
from ._middleware import AgentLoopMiddleware
from ._todo import (
    AgentModeProvider,
    TodoCompletionLoopEvaluator,
    TodoCompletionLoopEvaluatorOptions,
    TodoItem,
    TodoProvider,
    todos_remaining,
    todos_remaining_message,
)

__all__ = [
    "AIJudgeLoopEvaluator",
    "AIJudgeLoopEvaluatorOptions",
    "AgentLoopMiddleware",
    "AgentModeProvider",
    "CompletionMarkerLoopEvaluator",
    "CompletionMarkerLoopEvaluatorOptions",
    "DelegateLoopEvaluator",
    "FeedbackView",
    "JudgeVerdict",
    "LoopAgent",
    "LoopAgentOptions",
    "LoopContext",
    "LoopEvaluation",
    "LoopEvaluator",
    "TodoCompletionLoopEvaluator",
    "TodoCompletionLoopEvaluatorOptions",
    "TodoItem",
    "TodoProvider",
    "todos_remaining",
    "todos_remaining_message",
]
