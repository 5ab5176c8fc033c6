"""Hypothesis strategies drawing faults, for property tests of a user's own agents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._clients._faults import FAULT_KINDS, Fault

__all__ = ["fault_sets"]


def fault_sets(
    kinds: Sequence[str] = ("rate_limit", "server_error", "timeout"),
    *,
    calls: tuple[int, int] = (1, 10),
    min_faults: int = 0,
    max_faults: int = 3,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> Any:
    """Lists of :class:`~loopsim.Fault` rules for a :class:`~loopsim.FaultyChatClient`
    (or :func:`~loopsim.faulty_tool`): each a kind of ``kinds`` at one call number in
    ``calls`` (``when={"call": k}``), with ``options[kind]``; ``min_faults``..``max_faults``
    of them. A failure shrinks to the fewest, earliest, first-listed faults, as
    ``fault_set:`` does in a scenario's ``vary:``.

    Example:
        >>> from hypothesis import find
        >>> import loopsim
        >>> from loopsim.testing import fault_sets
        >>> def survives(faults):  # a caller that retries on 429 only, up to 5 times
        ...     client = loopsim.FaultyChatClient(loopsim.ScriptedChatClient(["ok"]), faults)
        ...     async def ask():
        ...         for _ in range(5):
        ...             try:
        ...                 return (await client.get_response([loopsim.Message.user("q")])).text
        ...             except loopsim.RateLimitError:
        ...                 pass
        ...     try:
        ...         return loopsim.simulate(ask) == "ok"
        ...     except loopsim.ModelError:
        ...         return False
        >>> find(fault_sets(["rate_limit", "server_error"]), lambda f: not survives(f))
        [Fault('server_error', when={'call': 1})]
    """
    from hypothesis import strategies as st  # noqa: PLC0415 - hypothesis only where drawn

    unknown = [k for k in [*kinds, *(options or {})] if k not in FAULT_KINDS]
    if unknown or not kinds:
        msg = (
            f"fault_sets: kinds must be fault kinds ({', '.join(FAULT_KINDS)}), "
            f"got {unknown or 'none'}"
        )
        raise ValueError(msg)
    low, high = calls
    if not 1 <= low <= high:
        msg = f"fault_sets: calls must be (low, high) with 1 <= low <= high, got {calls!r}"
        raise ValueError(msg)
    if not 0 <= min_faults <= max_faults:
        msg = f"fault_sets: need 0 <= min_faults <= max_faults, got {min_faults}, {max_faults}"
        raise ValueError(msg)
    given = {k: dict(v) for k, v in (options or {}).items()}

    def make(kind: str, call: int) -> Fault:
        return Fault(kind, when={"call": call}, **given.get(kind, {}))

    one = st.builds(make, st.sampled_from(list(kinds)), st.integers(low, high))
    return st.lists(one, min_size=min_faults, max_size=max_faults)
