"""Model faults as agent_framework's vendor clients raise them.

agent_framework's OpenAI clients (``agent_framework_openai``) catch what the ``openai``
SDK raises and raise :class:`agent_framework.exceptions.ChatClientException` with the
SDK's error as ``inner_exception`` (and as ``__cause__``); a content-filter refusal (an
HTTP 400 with code ``content_filter``) becomes ``OpenAIContentFilterException``. A
loopsim fault behind :func:`~loopsim.agent_framework.as_chat_client` is raised the same
way, so a user's ``except``/retry code sees what production would show it: the status
code, the ``retry-after`` header, the SDK's exception class. Without the ``openai``
package the inner exception is loopsim's own fault error.
"""

from __future__ import annotations

from typing import Any

from agent_framework.exceptions import ChatClientContentFilterException, ChatClientException

from .._clients import (
    ContentFilterError,
    ModelError,
    ModelTimeoutError,
    RateLimitError,
    StreamCutError,
)
from .._wording import say

__all__ = ["as_vendor_error"]

#: the endpoint the simulated SDK errors name (their request is never sent)
_URL = "https://api.openai.com/v1/chat/completions"


def _openai_error(error: ModelError) -> Exception | None:
    """The ``openai`` SDK's exception for ``error`` (None without the SDK)."""
    try:
        import httpx2  # noqa: PLC0415 - openai's HTTP client, present with openai
        import openai  # noqa: PLC0415 - optional: only its exception types are used
    except ImportError:
        return None
    request = httpx2.Request("POST", _URL)
    text = str(error)
    if isinstance(error, ModelTimeoutError):
        return openai.APITimeoutError(request=request)
    if isinstance(error, StreamCutError):
        return openai.APIConnectionError(message=text, request=request)
    if error.status_code is None:
        return None
    headers: dict[str, str] = {}
    body: dict[str, Any] = {"message": text, "type": "error", "code": None}
    kind: Any = openai.InternalServerError
    if isinstance(error, RateLimitError):
        kind = openai.RateLimitError
        body["code"] = "rate_limit_exceeded"
        if error.retry_after is not None:
            headers["retry-after"] = f"{error.retry_after:g}"
    elif isinstance(error, ContentFilterError):
        kind = openai.BadRequestError
        body["code"] = "content_filter"
    response = httpx2.Response(error.status_code, headers=headers, request=request)
    made: Exception = kind(text, response=response, body=body)
    return made


def as_vendor_error(error: ModelError, client: str) -> Exception:
    """What an agent_framework vendor client raises for ``error`` (its cause attached)."""
    inner = _openai_error(error) or error
    message = say("fault.af_prompt_failed", client=client, error=inner)
    if isinstance(error, ContentFilterError):
        try:
            from agent_framework_openai import (  # noqa: PLC0415 - optional vendor package
                OpenAIContentFilterException,
            )
        except ImportError:
            raised: Exception = ChatClientContentFilterException(message, inner_exception=inner)
        else:
            raised = OpenAIContentFilterException(message, inner_exception=inner)  # type: ignore[arg-type] # a BadRequestError when openai is there
    else:
        raised = ChatClientException(message, inner_exception=inner)
    raised.__cause__ = inner
    return raised
