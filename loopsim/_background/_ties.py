"""Which of several background tasks that finished at the same virtual instant wins a wait.

When children finish at the same virtual instant, the order a parent observes them in is
a scheduling accident in production (which timer callback the event loop ran first).
loopsim makes that choice explicit so that it can be explored, in the spirit of
fast-check's scheduler: the wait tool asks a *tie breaker* found in the current trace's
``resources`` under :data:`TIE_BREAKER`. The scenario runner installs one that follows
the scenario's ``ties:`` list, or, under hypothesis (``vary:``), draws the choice, so that
a property covers every order that matters and shrinks towards the first requested task.

Otherwise (no list entry left, plain :func:`loopsim.simulate` code, no simulation at all)
the first requested task wins: agent_framework's wait tool reports the first task, in the
requested order, among those its ``asyncio.wait`` found finished.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import _trace

__all__ = ["TIE_BREAKER", "TieBreaker", "break_tie"]

#: The key of the tie breaker in :attr:`loopsim._trace.Trace.resources`.
TIE_BREAKER = "background.tie_breaker"

#: Given the tied task ids in requested order (at least two), returns the index of the
#: one the parent observes first.
TieBreaker = Callable[[Sequence[int]], int]


def break_tie(task_ids: Sequence[int]) -> int:
    """The index (into ``task_ids``) of the task that wins a same-instant tie."""
    if len(task_ids) < 2:
        return 0
    trace = _trace.active()
    chooser: TieBreaker | None = None if trace is None else trace.resources.get(TIE_BREAKER)
    if chooser is None:
        return 0
    index = chooser(task_ids)
    if not 0 <= index < len(task_ids):
        msg = f"the tie breaker chose index {index} among {len(task_ids)} tied tasks"
        raise IndexError(msg)
    return index
