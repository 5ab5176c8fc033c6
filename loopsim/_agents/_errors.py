"""Errors a run of the built-in Agent raises for what upstream's Agent refuses too."""

from __future__ import annotations

__all__ = ["AgentRequestError", "ChatResponseError"]


class AgentRequestError(ValueError):
    """A run the agent refuses before it calls the model.

    Upstream's counterpart is ``AgentInvalidRequestException``: for example, a harness
    agent (which keeps its history per model call) asked to join a conversation that the
    service keeps, while the service does not store the history.
    """


class ChatResponseError(RuntimeError):
    """A model answer the agent cannot take.

    Upstream's counterpart is ``ChatClientInvalidResponseException``: for example, an
    answer that names a service conversation (``conversation_id``) to a harness agent
    whose service does not store the history. The answer is recorded (``model_response``)
    before the run fails, as on upstream.
    """
