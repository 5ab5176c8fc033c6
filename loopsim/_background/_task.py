"""The background task model: statuses and the serializable task record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["TERMINAL_STATUSES", "BackgroundTaskInfo", "BackgroundTaskStatus"]


class BackgroundTaskStatus(str, Enum):
    """Where a background task is in its life.

    ``running`` is the only incomplete status; ``completed``, ``failed`` and ``lost`` are
    terminal. A task is ``lost`` when its record says ``running`` but no live handle for it
    exists in this provider (a simulated process restart, a new provider instance, or
    after :meth:`~loopsim.BackgroundAgentsProvider.release_session`).
    """

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    LOST = "lost"

    def __str__(self) -> str:
        return self.value


TERMINAL_STATUSES = frozenset(
    {BackgroundTaskStatus.COMPLETED, BackgroundTaskStatus.FAILED, BackgroundTaskStatus.LOST}
)

_REQUIRED_KEYS = ("id", "agent_name", "description", "status")


@dataclass(slots=True, init=False)
class BackgroundTaskInfo:
    """One background task as the parent session records it.

    The record is what survives serialization of the parent session; the running child
    and its session do not. Field names and ``to_dict`` keys are upstream's (``id``,
    ``agent_name``, ``description``, ``status``, ``result_text``, ``error_text``), so a
    session's ``state`` looks the same as upstream's. loopsim's earlier spellings stay as
    aliases: ``task_id``, ``result`` and ``error`` (as constructor keywords too).

    Attributes:
        id: per-parent-session id, starting at 1, never reused.
        agent_name: the child agent's name as the model typed it.
        description: the model's label for the task.
        status: see :class:`BackgroundTaskStatus`.
        result_text: the child's response text (completed tasks).
        error_text: why the task failed (failed tasks).

    Example:
        >>> from loopsim import BackgroundTaskInfo
        >>> info = BackgroundTaskInfo(id=1, agent_name="writer", description="draft",
        ...                           status="completed", result_text="done")
        >>> info.to_dict()["status"], info.result_text, info.result
        ('completed', 'done', 'done')
        >>> BackgroundTaskInfo.from_dict(info.to_dict()) == info
        True
    """

    id: int
    agent_name: str
    description: str
    status: BackgroundTaskStatus
    result_text: str | None
    error_text: str | None

    def __init__(  # noqa: PLR0917 - upstream's fields, positional as a dataclass's
        self,
        id: int | None = None,
        agent_name: str | None = None,
        description: str | None = None,
        status: BackgroundTaskStatus | str | None = None,
        result_text: str | None = None,
        error_text: str | None = None,
        *,
        task_id: int | None = None,
        result: str | None = None,
        error: str | None = None,
    ) -> None:
        for upstream, alias, name in (
            (id, task_id, "id/task_id"),
            (result_text, result, "result_text/result"),
            (error_text, error, "error_text/error"),
        ):
            if upstream is not None and alias is not None:
                msg = f"BackgroundTaskInfo: give {name} once, not both spellings"
                raise TypeError(msg)
        the_id = id if id is not None else task_id
        if the_id is None or agent_name is None or description is None or status is None:
            msg = "BackgroundTaskInfo needs id, agent_name, description and status"
            raise TypeError(msg)
        self.id = the_id
        self.agent_name = agent_name
        self.description = description
        self.status = BackgroundTaskStatus(status)
        self.result_text = result_text if result_text is not None else result
        self.error_text = error_text if error_text is not None else error

    @property
    def task_id(self) -> int:
        """Alias of :attr:`id`."""
        return self.id

    @property
    def result(self) -> str | None:
        """Alias of :attr:`result_text`."""
        return self.result_text

    @property
    def error(self) -> str | None:
        """Alias of :attr:`error_text`."""
        return self.error_text

    @property
    def is_terminal(self) -> bool:
        """True for completed, failed and lost tasks."""
        return self.status in TERMINAL_STATUSES

    def to_dict(self, *, exclude_none: bool = True) -> dict[str, Any]:
        """The JSON-safe record (``result_text``/``error_text`` only when set, by default)."""
        data: dict[str, Any] = {
            "id": self.id,
            "agent_name": self.agent_name,
            "description": self.description,
            "status": self.status.value,
        }
        if self.result_text is not None or not exclude_none:
            data["result_text"] = self.result_text
        if self.error_text is not None or not exclude_none:
            data["error_text"] = self.error_text
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BackgroundTaskInfo:
        """Read a record written by :meth:`to_dict`; the first four keys are required."""
        missing = [key for key in _REQUIRED_KEYS if key not in data]
        if missing:
            msg = f"background task record is missing {', '.join(missing)}: {dict(data)!r}"
            raise ValueError(msg)
        return cls(
            id=data["id"],
            agent_name=data["agent_name"],
            description=data["description"],
            status=BackgroundTaskStatus(data["status"]),
            result_text=data.get("result_text"),
            error_text=data.get("error_text"),
        )
