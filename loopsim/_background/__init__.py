"""Background agents: the provider, its task model, and the loop helpers that wait for it."""

from ._completion import (
    DEFAULT_FEEDBACK_MESSAGE_TEMPLATE,
    INCOMPLETE_TASK_COUNT_PLACEHOLDER,
    INCOMPLETE_TASKS_PLACEHOLDER,
    BackgroundTaskCompletionLoopEvaluator,
    BackgroundTaskCompletionLoopEvaluatorOptions,
    background_tasks_running,
    background_tasks_running_message,
)
from ._provider import (
    BACKGROUND_AGENTS_PLACEHOLDER,
    DEFAULT_BACKGROUND_AGENTS_INSTRUCTIONS,
    DEFAULT_BACKGROUND_AGENTS_SOURCE_ID,
    DEFAULT_BACKGROUND_AGENTS_WAIT_TIMEOUT_SECONDS,
    BackgroundAgentsProvider,
)
from ._spawn import CANCELED_ERROR_TEXT
from ._task import BackgroundTaskInfo, BackgroundTaskStatus

__all__ = [
    "BACKGROUND_AGENTS_PLACEHOLDER",
    "CANCELED_ERROR_TEXT",
    "DEFAULT_BACKGROUND_AGENTS_INSTRUCTIONS",
    "DEFAULT_BACKGROUND_AGENTS_SOURCE_ID",
    "DEFAULT_BACKGROUND_AGENTS_WAIT_TIMEOUT_SECONDS",
    "DEFAULT_FEEDBACK_MESSAGE_TEMPLATE",
    "INCOMPLETE_TASKS_PLACEHOLDER",
    "INCOMPLETE_TASK_COUNT_PLACEHOLDER",
    "BackgroundAgentsProvider",
    "BackgroundTaskCompletionLoopEvaluator",
    "BackgroundTaskCompletionLoopEvaluatorOptions",
    "BackgroundTaskInfo",
    "BackgroundTaskStatus",
    "background_tasks_running",
    "background_tasks_running_message",
]
