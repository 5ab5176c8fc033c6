"""A support agent that may refund orders, but only with a human's approval.

``issue_refund`` requires approval. The app shows each request to a reviewer (the
``review`` callback: in production a ticket in a queue) and sends the decision back in
the same session; the agent then tells the customer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import agent_framework as af
from af_programs import models

#: What the refund tool did, per order (the team's ledger; a service in production).
REFUNDS: dict[str, float] = {}


@af.tool(approval_mode="always_require")
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order (a person must approve this first)."""
    REFUNDS[order_id] = amount
    return f"refunded {amount:.2f} on {order_id}"


@af.tool(approval_mode="never_require")
def order_total(order_id: str) -> float:
    """The amount paid for an order."""
    return {"A-100": 49.5, "A-200": 1200.0}.get(order_id, 0.0)


def build_agent() -> af.Agent:
    return af.Agent(
        client=models.chat_client("support"),
        name="support",
        instructions="Help with refunds. Check the order total before refunding.",
        tools=[order_total, issue_refund],
    )


async def main(
    request: str, review: Callable[[str, dict[str, Any]], bool]
) -> tuple[str, list[tuple[str, bool]]]:
    """Handle one customer request; returns the last answer and the reviewer's decisions."""
    REFUNDS.clear()
    agent = build_agent()
    session = agent.create_session()
    result = await agent.run(request, session=session)
    decisions: list[tuple[str, bool]] = []
    while result.user_input_requests:
        answers = []
        for asked in result.user_input_requests:
            call = asked.function_call
            arguments = call.parse_arguments() or {}
            approved = review(call.name, arguments)
            decisions.append((call.name, approved))
            answers.append(asked.to_function_approval_response(approved))
        result = await agent.run(af.Message(role="user", contents=answers), session=session)
    return result.messages[-1].text, decisions
