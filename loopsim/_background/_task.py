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


@dataclass(slots=True)
class BackgroundTaskInfo:
    """One background task as the parent session records it.

    The record is what survives serialization of the parent session; the running child
    and its session do not. ``to_dict`` uses upstream's keys (``id``, ``agent_name``,
    ``description``, ``status``, ``result_text``, ``error_text``), so a session's
    ``state`` looks the same as upstream's.

    Attributes:
        task_id: per-parent-session id, starting at 1, never reused.
        agent_name: the child agent's name as the model typed it.
        description: the model's label for the task.
        status: see :class:`BackgroundTaskStatus`.
        result: the child's response text (completed tasks).
        error: why the task failed (failed tasks).

    Example:
        >>> from loopsim import BackgroundTaskInfo
        >>> info = BackgroundTaskInfo(1, "writer", "draft", "completed", result="done")
        >>> info.to_dict()["status"], info.to_dict()["result_text"]
        ('completed', 'done')
        >>> BackgroundTaskInfo.from_dict(info.to_dict()) == info
        True
    """

    task_id: int
    agent_name: str
    description: str
    status: BackgroundTaskStatus
    result: str | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        self.status = BackgroundTaskStatus(self.status)

    @property
    def is_terminal(self) -> bool:
        """True for completed, failed and lost tasks."""
        return self.status in TERMINAL_STATUSES

    def to_dict(self, *, exclude_none: bool = True) -> dict[str, Any]:
        """The JSON-safe record (``result_text``/``error_text`` only when set, by default)."""
        data: dict[str, Any] = {
            "id": self.task_id,
            "agent_name": self.agent_name,
            "description": self.description,
            "status": self.status.value,
        }
        if self.result is not None or not exclude_none:
            data["result_text"] = self.result
        if self.error is not None or not exclude_none:
            data["error_text"] = self.error
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BackgroundTaskInfo:
        """Read a record written by :meth:`to_dict`; the first four keys are required."""
        missing = [key for key in _REQUIRED_KEYS if key not in data]
        if missing:
            msg = f"background task record is missing {', '.join(missing)}: {dict(data)!r}"
            raise ValueError(msg)
        return cls(
            task_id=data["id"],
            agent_name=data["agent_name"],
            description=data["description"],
            status=BackgroundTaskStatus(data["status"]),
            result=data.get("result_text"),
            error=data.get("error_text"),
        )
