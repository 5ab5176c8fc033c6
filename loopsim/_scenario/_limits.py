"""How much of a scenario file the loader reads and explores before it refuses.

Every bound ends in a located :class:`~loopsim.ScenarioError` naming the bound and how to
raise it, never in a hang, a crash or a silent truncation. The defaults leave room for
every scenario a person writes (the shipped ones use at most 2 % of each) and stop
hostile files (alias bombs, deep nesting, huge ``vary:`` lists) in well under a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "ScenarioLimits", "listing"]


@dataclass(frozen=True, slots=True)
class ScenarioLimits:
    r"""Bounds the scenario loader enforces (pass ``limits=`` to ``load_scenario``).

    Attributes:
        max_bytes: largest file, in bytes of UTF-8 text.
        max_nodes: most values (scalars, lists, mappings) in the document, every alias
            counted as the whole value it stands for (the "billion laughs" bound).
        max_depth: deepest nesting of lists and mappings, through aliases too.
        max_vary_size: largest ``max_size`` (and ``min_size``) of a ``vary: list_of``.
        max_vary_items: most items in any one draw of a ``vary:`` entry (nested
            ``list_of`` multiply).
        max_vary_values: most values ``validate`` checks across the ``vary:`` draws of
            a file: each choice and each end of a ``vary:`` entry is validated as a whole
            copy of the document, so this is draws times the document's size.
        max_errors: most errors one file reports (the rest are counted, not listed).
        max_listed: most names listed in one message (``defined agents: …``).

    Example:
        >>> import loopsim
        >>> from loopsim._scenario import load_scenario_text
        >>> text = "version: 1\nx: [[[[1]]]]\n"
        >>> try:
        ...     load_scenario_text(text, limits=loopsim.ScenarioLimits(max_depth=3))
        ... except loopsim.ScenarioError as exc:
        ...     print(exc.location, "-", exc.problem)
        x[0][0] - nested deeper than 3 levels (through aliases too)
    """

    max_bytes: int = 1024 * 1024
    max_nodes: int = 100_000
    max_depth: int = 64
    max_vary_size: int = 1_000
    max_vary_items: int = 10_000
    max_vary_values: int = 100_000
    max_errors: int = 20
    max_listed: int = 20


DEFAULT_LIMITS = ScenarioLimits()


def listing(names: Sequence[object], limit: int = DEFAULT_LIMITS.max_listed) -> str:
    """``a, b, c`` — at most ``limit`` names, then ``… and N more``."""
    shown = ", ".join(str(n) for n in names[:limit])
    rest = len(names) - limit
    return f"{shown}, … and {rest} more" if rest > 0 else shown
