"""Looping until background tasks finish: the .NET-style evaluator and the Python helpers.

Two shapes, as upstream:

* :class:`BackgroundTaskCompletionLoopEvaluator` (for :class:`~loopsim.LoopAgent`) finds
  the provider through ``context.agent.get_service`` and **refreshes** first, so a task
  that finished is finalized and a ``running`` record without a live run becomes
  ``lost`` — only truly running tasks keep the loop going.
* :func:`background_tasks_running` / :func:`background_tasks_running_message` (for
  :class:`~loopsim.AgentLoopMiddleware`) read the **persisted** records only, as
  upstream's Python helpers do; pair them with ``max_iterations``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .._loop import LoopContext, LoopEvaluation, LoopEvaluator
from .._loop._evaluators import required_service
from .._wording import WORDING
from ._provider import BackgroundAgentsProvider
from ._task import BackgroundTaskStatus

__all__ = [
    "DEFAULT_FEEDBACK_MESSAGE_TEMPLATE",
    "INCOMPLETE_TASKS_PLACEHOLDER",
    "INCOMPLETE_TASK_COUNT_PLACEHOLDER",
    "BackgroundTaskCompletionLoopEvaluator",
    "BackgroundTaskCompletionLoopEvaluatorOptions",
    "background_tasks_running",
    "background_tasks_running_message",
]

INCOMPLETE_TASKS_PLACEHOLDER = "{incomplete_tasks}"
INCOMPLETE_TASK_COUNT_PLACEHOLDER = "{incomplete_task_count}"
#: Our own wording; structure as upstream: the count sentence ending in a colon, the task
#: lines, a blank line, then what to do.
DEFAULT_FEEDBACK_MESSAGE_TEMPLATE = WORDING["background.running_feedback"]

_RUNNING = BackgroundTaskStatus.RUNNING.value


def _render(template: str, tasks: Sequence[tuple[Any, Any, Any]]) -> str:
    lines = "\n".join(
        f"- #{task_id} ({agent}): {description}" for task_id, agent, description in tasks
    )
    return template.replace(INCOMPLETE_TASK_COUNT_PLACEHOLDER, str(len(tasks))).replace(
        INCOMPLETE_TASKS_PLACEHOLDER, lines
    )


@dataclass
class BackgroundTaskCompletionLoopEvaluatorOptions:
    """Options of :class:`BackgroundTaskCompletionLoopEvaluator`.

    Attributes:
        feedback_message_template: the feedback while tasks run (None: the default).
            ``{incomplete_task_count}`` becomes the number of running tasks, then
            ``{incomplete_tasks}`` the lines ``- #id (agent): description``.
    """

    feedback_message_template: str | None = None


class BackgroundTaskCompletionLoopEvaluator(LoopEvaluator):
    """Keeps a :class:`~loopsim.LoopAgent` going while background tasks are running.

    At each evaluation it finds the :class:`~loopsim.BackgroundAgentsProvider` through
    ``context.agent.get_service`` (none → ``RuntimeError``), refreshes the session's
    tasks and continues, with feedback listing them, while any is ``running``. Completed,
    failed and lost tasks never keep the loop going.

    Example:
        >>> import loopsim
        >>> ev = loopsim.BackgroundTaskCompletionLoopEvaluator()
        >>> ev.feedback_message_template == ev.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
        True
    """

    INCOMPLETE_TASKS_PLACEHOLDER: ClassVar[str] = INCOMPLETE_TASKS_PLACEHOLDER
    INCOMPLETE_TASK_COUNT_PLACEHOLDER: ClassVar[str] = INCOMPLETE_TASK_COUNT_PLACEHOLDER
    DEFAULT_FEEDBACK_MESSAGE_TEMPLATE: ClassVar[str] = DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
    #: how the loop and invariant 6 know this evaluator (by identity, not by its name)
    _loopsim_marks: ClassVar[frozenset[str]] = frozenset({"background_completion"})

    def __init__(self, options: BackgroundTaskCompletionLoopEvaluatorOptions | None = None) -> None:
        template = None if options is None else options.feedback_message_template
        self.feedback_message_template = (
            DEFAULT_FEEDBACK_MESSAGE_TEMPLATE if template is None else template
        )

    def __repr__(self) -> str:
        return "BackgroundTaskCompletionLoopEvaluator()"

    async def evaluate(self, context: LoopContext) -> LoopEvaluation:
        provider = required_service(
            context, BackgroundAgentsProvider, "BackgroundTaskCompletionLoopEvaluator"
        )
        running = provider.incomplete_tasks(context.session)
        if not running:
            return LoopEvaluation.stop()
        return LoopEvaluation.continue_with_feedback(
            _render(
                self.feedback_message_template,
                [(t.task_id, t.agent_name, t.description) for t in running],
            )
        )


def _find_provider(agent: Any) -> BackgroundAgentsProvider | None:
    """The agent's first BackgroundAgentsProvider (never raises)."""
    if agent is None:
        return None
    for provider in getattr(agent, "context_providers", None) or ():
        if isinstance(provider, BackgroundAgentsProvider):
            return provider
    get_service = getattr(agent, "get_service", None)  # a decorator around the chat agent
    if callable(get_service):
        found = get_service(BackgroundAgentsProvider)
        if isinstance(found, BackgroundAgentsProvider):
            return found
    return None


def _running_records(session: Any, agent: Any) -> list[dict[str, Any]] | None:
    if session is None:
        return None
    provider = _find_provider(agent)
    if provider is None:
        return None
    state = getattr(session, "state", None)
    data = state.get(provider.source_id) if isinstance(state, dict) else None
    if not isinstance(data, dict):
        return None
    tasks = data.get("tasks")
    if not isinstance(tasks, list):
        return None
    return [r for r in tasks if isinstance(r, dict) and r.get("status") == _RUNNING]


def background_tasks_running() -> Callable[..., bool]:
    """A ``should_continue`` predicate for :class:`~loopsim.AgentLoopMiddleware`.

    True while the session's *persisted* task records include a ``running`` one. It does
    not refresh: a record stays ``running`` until something refreshes it (the next
    iteration's ``before_run``), so pair it with ``max_iterations``. False when the
    session, the agent or its provider is missing.

    Example:
        >>> import loopsim
        >>> loopsim.background_tasks_running()(session=None, agent=None)
        False
    """

    def should_continue(*, session: Any = None, agent: Any = None, **_: Any) -> bool:
        running = _running_records(session, agent)
        return bool(running)

    should_continue.__name__ = "background_tasks_running"
    return should_continue


def background_tasks_running_message(
    *, session: Any = None, agent: Any = None, **_: Any
) -> str | None:
    """A ``next_message`` for :class:`~loopsim.AgentLoopMiddleware`: the running tasks.

    The same text as the evaluator's default feedback, from the persisted records; None
    when nothing runs or the session, agent or provider is missing.
    """
    running = _running_records(session, agent)
    if not running:
        return None
    return _render(
        DEFAULT_FEEDBACK_MESSAGE_TEMPLATE,
        [(r.get("id"), r.get("agent_name"), r.get("description")) for r in running],
    )
