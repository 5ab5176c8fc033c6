"""A trading assistant that books orders under short ids, ``TRADE-xxxxxxxx``.

The id is cut from a uuid4 (eight hex digits, as the team's ticket system wants) and
the booking is kept in a dict keyed on it: two orders with the same short id would
overwrite each other.
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import uuid4

import agent_framework as af
from af_programs import models


def new_trade_id() -> str:
    return f"TRADE-{uuid4().hex[:8]}"


def build_desk(
    make_id: Callable[[], str] = new_trade_id,
) -> tuple[af.Agent, dict[str, dict[str, object]]]:
    book: dict[str, dict[str, object]] = {}

    @af.tool(approval_mode="never_require")
    def book_orders(symbol: str, quantity: int, count: int = 1) -> list[str]:
        """Book ``count`` orders of ``quantity`` shares of ``symbol``; returns their ids."""
        ids = []
        for _ in range(count):
            trade_id = make_id()
            book[trade_id] = {"symbol": symbol, "quantity": quantity}
            ids.append(trade_id)
        return ids[:3] + ([f"... {count - 3} more"] if count > 3 else [])

    @af.tool(approval_mode="never_require")
    def open_orders() -> int:
        """How many orders are on the book."""
        return len(book)

    agent = af.Agent(
        client=models.chat_client("trader"),
        name="trader",
        instructions="Book the orders the user asks for and confirm how many are open.",
        tools=[book_orders, open_orders],
    )
    return agent, book


async def main(request: str = "Split 5000 ACME into 2000 orders.") -> dict[str, object]:
    agent, book = build_desk()
    result = await agent.run(request, session=agent.create_session())
    return {"answer": result.text, "booked": len(book), "first": sorted(book)[:2]}
