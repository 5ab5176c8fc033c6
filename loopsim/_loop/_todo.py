"""A minimal todo list and agent mode, and the TodoCompletionLoopEvaluator.

loopsim has no full todo or mode provider yet (upstream's come with model-facing tools
and file storage); these keep just the state the evaluator reads, in the session, so
the evaluator can be used and tested: items ``(id, title, description, done)`` and
the current mode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .._agents import AgentSession, ContextProvider
from .._wording import WORDING, say
from ._evaluation import LoopContext, LoopEvaluation, LoopEvaluator
from ._evaluators import required_service

__all__ = [
    "AgentModeProvider",
    "TodoCompletionLoopEvaluator",
    "TodoCompletionLoopEvaluatorOptions",
    "TodoItem",
    "TodoProvider",
    "todos_remaining",
    "todos_remaining_message",
]


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One todo entry."""

    id: int
    title: str
    description: str | None = None
    done: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "done": self.done,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TodoItem:
        return cls(
            int(data["id"]), str(data["title"]), data.get("description"), bool(data.get("done"))
        )


class TodoProvider(ContextProvider):
    """A todo list kept in the session (``session.state[source_id]``); ids start at 1.

    Example:
        >>> import loopsim
        >>> todos = loopsim.TodoProvider()
        >>> session = loopsim.AgentSession()
        >>> todos.add(session, "write tests").id
        1
        >>> [t.title for t in todos.remaining(session)]
        ['write tests']
    """

    def __init__(self, source_id: str = "todos") -> None:
        super().__init__(source_id)

    def _state(self, session: AgentSession) -> dict[str, Any]:
        state: dict[str, Any] = session.state.setdefault(self.source_id, {})
        state.setdefault("next_id", 1)
        state.setdefault("items", [])
        return state

    def add(self, session: AgentSession, title: str, description: str | None = None) -> TodoItem:
        """Add an open item."""
        if not title or not title.strip():
            msg = "title must not be empty"
            raise ValueError(msg)
        state = self._state(session)
        item = TodoItem(int(state["next_id"]), title, description)
        state["next_id"] = item.id + 1
        state["items"].append(item.to_dict())
        return item

    def complete(self, session: AgentSession, item_id: int) -> TodoItem:
        """Mark item ``item_id`` done."""
        for record in self._state(session)["items"]:
            if record["id"] == item_id:
                record["done"] = True
                return TodoItem.from_dict(record)
        msg = f"no todo item with id {item_id}"
        raise KeyError(msg)

    def items(self, session: AgentSession) -> list[TodoItem]:
        """Every item, in the order they were added."""
        return [TodoItem.from_dict(r) for r in self._state(session)["items"]]

    def remaining(self, session: AgentSession) -> list[TodoItem]:
        """The items not done yet."""
        return [item for item in self.items(session) if not item.done]


class AgentModeProvider(ContextProvider):
    """The agent's current mode (e.g. ``plan`` / ``execute``), kept in the session."""

    def __init__(
        self,
        modes: Sequence[str] = ("plan", "execute"),
        *,
        default_mode: str | None = None,
        source_id: str = "mode",
    ) -> None:
        super().__init__(source_id)
        if not modes:
            msg = "modes must not be empty"
            raise ValueError(msg)
        self.modes = tuple(modes)
        self.default_mode = self.modes[0] if default_mode is None else default_mode
        if self.default_mode not in self.modes:
            msg = f"default_mode {self.default_mode!r} is not one of {self.modes}"
            raise ValueError(msg)

    def get_mode(self, session: AgentSession) -> str:
        """The session's current mode (the default until one is set)."""
        mode = session.state.get(self.source_id, {}).get("mode")
        return self.default_mode if mode is None else str(mode)

    def set_mode(self, session: AgentSession, mode: str) -> None:
        """Switch the session to ``mode``."""
        if mode not in self.modes:
            msg = f"unknown mode {mode!r}; available: {', '.join(self.modes)}"
            raise ValueError(msg)
        session.state.setdefault(self.source_id, {})["mode"] = mode


@dataclass
class TodoCompletionLoopEvaluatorOptions:
    """Options of :class:`TodoCompletionLoopEvaluator`.

    Attributes:
        modes: keep looping only while the agent is in one of these modes (matched
            exactly; None = in every mode). Requires an :class:`AgentModeProvider`.
        feedback_message_template: feedback while items remain; ``{remaining_todos}``
            is replaced by ``- id: title — description`` lines.
    """

    modes: Iterable[str] | None = None
    feedback_message_template: str | None = None


class TodoCompletionLoopEvaluator(LoopEvaluator):
    """Continues while the agent's :class:`TodoProvider` has open items.

    Finds the provider through ``context.agent.get_service(TodoProvider)``; without one
    it raises ``RuntimeError``.
    """

    REMAINING_TODOS_PLACEHOLDER: ClassVar[str] = "{remaining_todos}"
    DEFAULT_FEEDBACK_MESSAGE_TEMPLATE: ClassVar[str] = WORDING["evaluator.todo.feedback"]

    def __init__(self, options: TodoCompletionLoopEvaluatorOptions | None = None) -> None:
        options = options or TodoCompletionLoopEvaluatorOptions()
        self.modes: frozenset[str] | None = None
        if options.modes is not None:
            if isinstance(options.modes, str):
                msg = "modes must be a collection of mode names, not a str"
                raise TypeError(msg)
            modes = list(options.modes)
            if not modes:
                msg = "modes must not be empty (use None to loop in every mode)"
                raise ValueError(msg)
            for index, mode in enumerate(modes):
                if mode is None or not isinstance(mode, str) or not mode.strip():
                    msg = f"modes[{index}] must be a non-empty mode name, got {mode!r}"
                    raise ValueError(msg)
            self.modes = frozenset(modes)
        self.feedback_message_template = (
            self.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
            if options.feedback_message_template is None
            else options.feedback_message_template
        )

    async def evaluate(self, context: LoopContext) -> LoopEvaluation:
        todos = required_service(context, TodoProvider, "TodoCompletionLoopEvaluator")
        if self.modes is not None:
            mode_provider = required_service(
                context, AgentModeProvider, "TodoCompletionLoopEvaluator with modes"
            )
            if mode_provider.get_mode(context.session) not in self.modes:
                return LoopEvaluation.stop()
        remaining = todos.remaining(context.session)
        if not remaining:
            return LoopEvaluation.stop()
        lines = "\n".join(
            f"- {item.id}: {item.title}"
            + (
                f" \u2014 {item.description}"
                if item.description and item.description.strip()
                else ""
            )
            for item in remaining
        )
        return LoopEvaluation.continue_with_feedback(
            self.feedback_message_template.replace(self.REMAINING_TODOS_PLACEHOLDER, lines)
        )


def _find(agent: Any, kind: type[ContextProvider]) -> Any:
    """The agent's first context provider of ``kind`` (through wrappers), or None."""
    if agent is None:
        return None
    for provider in getattr(agent, "context_providers", None) or ():
        if isinstance(provider, kind):
            return provider
    get_service = getattr(agent, "get_service", None)
    return get_service(kind) if callable(get_service) else None


def todos_remaining(*, looping_modes: Sequence[str] | None = None) -> Callable[..., bool]:
    """A ``should_continue`` predicate: keep going while the agent's todo list has open items.

    Upstream's Python helper. It finds the agent's :class:`TodoProvider` (None found, or no
    session: stop). With ``looping_modes`` it continues only while the agent's
    :class:`AgentModeProvider` mode is one of them, compared ignoring case and blanks.

    Raises:
        ValueError: ``looping_modes`` is empty (the loop could never run).
    """
    allowed: set[str] | None = None
    if looping_modes is not None:
        allowed = {mode.strip().lower() for mode in looping_modes}
        if not allowed:
            msg = "looping_modes must be None or name at least one mode"
            raise ValueError(msg)

    def should_continue(*, session: Any = None, agent: Any = None, **_: Any) -> bool:
        if session is None or agent is None:
            return False
        if allowed is not None:
            modes = _find(agent, AgentModeProvider)
            if modes is not None and modes.get_mode(session).strip().lower() not in allowed:
                return False
        todos = _find(agent, TodoProvider)
        return todos is not None and bool(todos.remaining(session))

    return should_continue


def todos_remaining_message(*, session: Any = None, agent: Any = None, **_: Any) -> str | None:
    """A ``next_message`` callable listing the open todo items (None when there are none)."""
    if session is None or agent is None:
        return None
    todos = _find(agent, TodoProvider)
    if todos is None:
        return None
    remaining = todos.remaining(session)
    if not remaining:
        return None
    items = "\n".join(f"- {item.title}" for item in remaining)
    return say("todo.remaining_feedback", count=len(remaining), items=items)
