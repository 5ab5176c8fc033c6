"""A user evaluator whose name looks like the built-in's (identity, not names, test)."""

from __future__ import annotations

import loopsim


class BackgroundTaskCompletionLikeThing(loopsim.LoopEvaluator):
    """A correct user evaluator with its own rule: one more pass, then stop."""

    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        if context.iteration >= 2 or "DONE" in context.last_response.text:
            return loopsim.LoopEvaluation.stop()
        return loopsim.LoopEvaluation.continue_with_feedback("one more pass")
