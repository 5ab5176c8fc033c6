"""WORDING: every model-facing sentence loopsim's built-in engine words on its own.

Key → loopsim's text (tool descriptions, default instructions, nudges, error texts). The
``--engine both`` comparison normalizes both transcripts through this table. The table
is owned by the fidelity work; this is its minimal starting point (same module path and
name, so branches merge).
"""

from __future__ import annotations

__all__ = ["WORDING", "agrees"]

WORDING: dict[str, str] = {}


def agrees(ours: str, theirs: str) -> bool:
    """True when ``theirs`` (the other engine's text) carries the facts of ``ours``."""
    return ours == theirs
