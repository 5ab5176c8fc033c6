"""An evaluator that passes ``loopsim check-evaluator``: stop once the agent says a keyword.

Run the checker on it from this folder::

    loopsim check-evaluator keyword_evaluator:KeywordEvaluator --options '{"keyword": "DONE"}'
"""

from __future__ import annotations

import loopsim


class KeywordEvaluator(loopsim.LoopEvaluator):
    """Stop when the last response contains ``keyword``; otherwise ask for another pass.

    It reads only the context and keeps no state on ``self``; the number of passes so
    far is ``context.iteration`` (per-run state would go in
    ``context.additional_properties``).
    """

    def __init__(self, keyword: str = "DONE", feedback: str | None = None) -> None:
        if not keyword:
            raise ValueError("keyword must not be empty")
        self.keyword = keyword
        self.feedback = feedback or f"Not finished yet. Reply with {keyword} when you are done."

    async def evaluate(self, context: loopsim.LoopContext) -> loopsim.LoopEvaluation:
        # `.text` joins the text of every message: "" for empty or tool-only responses.
        if self.keyword in context.last_response.text:
            return loopsim.LoopEvaluation.stop()
        return loopsim.LoopEvaluation.continue_with_feedback(
            f"{self.feedback} (pass {context.iteration})"
        )
