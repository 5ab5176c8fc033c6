"""An evaluator with two realistic bugs that ``loopsim check-evaluator`` catches.

It means to "stop when the agent says DONE, or give up after ``patience`` misses", but:

1. it counts misses on ``self``, so the count leaks from one loop run (and one context)
   into the next: the same context gets "continue" the first time and "stop" later;
2. it reads ``context.last_response.messages[-1]``, which raises ``IndexError`` on an
   empty response.

Run the checker on it from this folder::

    loopsim check-evaluator patience_evaluator:PatienceEvaluator --options '{"patience": 2}'
"""

from __future__ import annotations

import loopsim


class PatienceEvaluator(loopsim.LoopEvaluator):
    def __init__(self, patience: int = 2) -> None:
        self.patience = patience
        self.misses = 0  # BUG 1: per-run state on self (use context.additional_properties)

    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        last = context.last_response.messages[-1]  # BUG 2: empty responses have no messages
        if "DONE" in last.text:
            return loopsim.LoopEvaluation.stop()
        self.misses += 1
        if self.misses > self.patience:
            return loopsim.LoopEvaluation.stop()
        return loopsim.LoopEvaluation.continue_with_feedback("keep going")
