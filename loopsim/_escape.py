"""One escaping function per picture target: Mermaid text and HTML text.

Every text drawn into a Mermaid diagram or an HTML page (agent names, messages, tool
arguments and results, scenario names) goes through one of these, so no user text can
end a label, open a Mermaid directive (``%%{init: ...}%%``) or comment (``%%``), draw an
arrow, spell an entity or open an HTML element. Lone surrogates, which a transcript may
hold (JSON ``"\\udc80"``) but UTF-8 cannot, become U+FFFD.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

__all__ = ["html_text", "mermaid_text", "no_surrogates"]

_SURROGATE = re.compile("[\ud800-\udfff]")
#: Mermaid entity codes for the characters that mean something in a sequence or gantt line:
#: ``#`` and ``;`` (entity syntax), ``%`` (directives and comments), ``<``/``>`` (HTML and
#: arrows), ``&`` (HTML entities in labels), ``:`` is kept (text follows the first one).
_MERMAID = {
    "#": "#35;",
    ";": "#59;",
    "%": "#37;",
    "<": "#lt;",
    ">": "#gt;",
    "&": "#amp;",
    "\\": "#92;",
    "`": "#96;",
    "{": "#123;",
    "}": "#125;",
}
_MERMAID_SPECIAL = re.compile("[#;%<>&\\\\`{}\ud800-\udfff]")


def no_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (so it encodes as UTF-8)."""
    return _SURROGATE.sub("\ufffd", text)


def mermaid_text(text: str) -> str:
    """``text`` safe inside one Mermaid label or message (no newline handling: the caller
    folds or splits lines)."""
    if _MERMAID_SPECIAL.search(text) is None:
        return text
    return "".join(_MERMAID.get(c, "\ufffd" if "\ud800" <= c <= "\udfff" else c) for c in text)


def html_text(value: Any) -> str:
    """``value`` as HTML text, safe in element content and in quoted attribute values."""
    return escape(no_surrogates("" if value is None else str(value)), quote=True)
