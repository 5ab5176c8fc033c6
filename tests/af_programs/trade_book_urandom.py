"""The trade_book program, but its ids come from ``os.urandom`` (which loopsim does not seed).

Exists to show that the three-runs check catches a program loopsim cannot make
deterministic: the ids differ run to run, and so do the transcripts.
"""

from __future__ import annotations

import os

from af_programs.trade_book import build_desk


def new_trade_id() -> str:
    return f"TRADE-{os.urandom(4).hex()}"


async def main(request: str = "Split 5000 ACME into 2000 orders.") -> dict[str, object]:
    agent, book = build_desk(new_trade_id)
    result = await agent.run(request, session=agent.create_session())
    return {"answer": result.text, "booked": len(book), "first": sorted(book)[:2]}
