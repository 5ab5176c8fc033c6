"""The secret detectors: one regular expression per kind of credential, a literal prefilter.

Each :class:`Detector` names a kind of secret (an AWS access key id, a JWT, a PEM private
key, ...), its pattern, the lower-case literals one of which any match contains (so text
holding none of them skips the regular expressions entirely), and optionally the group
``v`` (the part replaced, so ``password: hunter2`` keeps ``password: ``) and a check that
a candidate must pass (a ``Basic`` credential must decode to ``user:password``).

Text is matched after Unicode normalization: zero-width and other format characters are
dropped and each character is NFKC-normalized, so ``sk-\u200bproj...`` or a key in
full-width letters is found too. A match maps back to the original characters, so text
around a secret is kept as it was.
"""

from __future__ import annotations

import base64
import binascii
import functools
import os
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DETECTORS",
    "Detector",
    "Scan",
    "environment_secrets",
    "is_secret_field",
    "secret_environment_name",
]


def _basic_credential(value: str) -> bool:
    """``value`` is base64 of ``user:password`` (not an English word after "basic")."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and decoded.isascii()


def _mixed(value: str) -> bool:
    """Upper, lower and digits all present: a random key, not a word or a hex digest."""
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )


@dataclass(frozen=True)
class Detector:
    """One kind of secret.

    Args:
        name: what it finds, for error messages ("an AWS access key id").
        pattern: the regular expression; a group ``v`` marks the part replaced.
        literals: lower-case strings one of which every match contains (empty: always run).
        check: a test on the matched secret (group ``v`` or the whole match).
    """

    name: str
    pattern: str
    literals: tuple[str, ...]
    check: Callable[[str], bool] | None = None


#: Where a token starts: after a non-word character, or after a JSON escape such as ``\\n``
#: (the write-time scan reads JSON text, where ``"ok.\\nsk-..."`` has no word boundary).
_S = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrtbf])|(?<=\\u[0-9a-fA-F]{4}))"

_FIELD_NAMES = (
    r"password|passwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret|credentials?|(?<!page_)(?<!next_)(?<!continuation_)token"
)
#: A value after ``name: ``/``name=``: up to the closing quote when quoted, else a word.
_VALUE = (
    r"(?P<v>(?!\[REDACTED\])(?!(?:null|none|true|false)\b)"
    r"(?:(?<=[\"'])[^\"'\\\n]{3,200}|[^\s\"'\\,;{}()\[\]<>]{3,200}))"
)
_QUOTE = r"(?:\\?[\"'])?"

DETECTORS: tuple[Detector, ...] = (
    Detector(
        "an HTTP Authorization value",
        _S + r"(?i:(?:proxy-)?authorization" + _QUOTE + r"\s*[:=]\s*" + _QUOTE + r")"
        r"(?P<v>(?!\[REDACTED\])(?:(?i:basic|bearer|digest|negotiate|ntlm|token|apikey|hoba|mutual"
        r"|aws4-hmac-sha256|sharedkey|sharedaccesssignature)\s+)?[^\s\"'\\]{4,})",
        ("authorization",),
    ),
    Detector(
        "an HTTP Basic credential",
        _S + r"(?i:basic\s+)(?P<v>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])",
        ("basic",),
        _basic_credential,
    ),
    Detector(
        "a bearer token",
        _S + r"(?i:bearer\s+)[A-Za-z0-9\-._~+/]{16,}=*",
        ("bearer",),
    ),
    Detector("an OpenAI-style key", _S + r"sk-[A-Za-z0-9_\-]{20,}", ("sk-",)),
    Detector(
        "an AWS access key id",
        _S + r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b",
        ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka"),
    ),
    Detector(
        "an AWS secret access key",
        r"(?i:aws)[^\n]{0,60}?(?<![A-Za-z0-9/+])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ("aws",),
        _mixed,
    ),
    Detector("a Google API key", _S + r"AIza[0-9A-Za-z_\-]{35}", ("aiza",)),
    Detector("a Google OAuth token", _S + r"ya29\.[0-9A-Za-z_\-]{20,}", ("ya29.",)),
    Detector("a Google OAuth client secret", _S + r"GOCSPX-[0-9A-Za-z_\-]{20,}", ("gocspx-",)),
    Detector(
        "an Azure storage or service bus key",
        _S + r"(?i:(?:account_?key|shared_?access_?key)\s*=\s*)(?P<v>[A-Za-z0-9+/]{20,}={0,2})",
        ("accountkey", "account_key", "sharedaccesskey", "shared_access_key"),
    ),
    Detector(
        "an Azure SAS signature",
        r"(?i:[?&]sig=)(?P<v>[A-Za-z0-9%+/=]{16,})",
        ("sig=",),
    ),
    Detector(
        "an Azure client secret",
        r"(?:(?<![A-Za-z0-9_~.\-])|(?<=\\[nrtbf]))[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"
        r"(?![A-Za-z0-9_~.\-])",
        ("q~",),
    ),
    Detector("a Hugging Face token", _S + r"(?:hf|api_org)_[A-Za-z0-9]{30,}", ("hf_", "api_org_")),
    Detector(
        "a Stripe key",
        _S + r"(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}|whsec_[0-9A-Za-z]{20,})",
        ("_live_", "_test_", "whsec_"),
    ),
    Detector(
        "a GitHub token",
        _S + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Detector("a GitLab token", _S + r"glpat-[A-Za-z0-9_\-]{20,}", ("glpat-",)),
    Detector(
        "a Slack token",
        _S + r"(?:xox[abeoprs]-[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{10,})"
        r"|(?i:hooks\.slack\.com/services/)(?P<v>[A-Za-z0-9_/]{20,})",
        ("xox", "xapp-", "hooks.slack.com"),
    ),
    Detector("an npm token", _S + r"npm_[A-Za-z0-9]{36}\b", ("npm_",)),
    Detector("a PyPI token", _S + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{40,}", ("pypi-",)),
    Detector("a SendGrid key", _S + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", ("sg.",)),
    Detector(
        "a JSON Web Token",
        _S + r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*",
        ("eyj",),
    ),
    Detector(
        "a PEM private key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,20000}?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"|[A-Za-z0-9+/=\s\\:,\-]*)",
        ("private key",),
    ),
    Detector(
        "a password in a URL",
        _S + r"(?i:[a-z][a-z0-9+.\-]{1,20}://)"
        r"(?P<v>[^\s/?#@:\"'\\]{0,200}:[^\s/?#@\"'\\]{1,200})@",
        ("://",),
    ),
    Detector(
        "a password, secret or token field",
        r"(?i:(?:" + _FIELD_NAMES + r")" + _QUOTE + r"\s*(?:[:=]|=>)\s*" + _QUOTE + r")" + _VALUE,
        (
            "password",
            "passwd",
            "passphrase",
            "secret",
            "key",
            "credential",
            "token",
        ),
    ),
)

#: Dictionary keys whose values are secret whatever they hold (a tool's ``password`` argument).
_FIELD_KEY = re.compile(r"(?i:(?:" + _FIELD_NAMES + r"|\bpwd|authorization|cookie)$)")

#: Zero-width and other invisible format characters dropped before matching.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]"
)

_SECRET_NAME_PARTS = frozenset(
    {
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "PAT",
        "SAS",
        "PRIVATE",
        "COOKIE",
        "SIGNATURE",
        "DSN",
    }
)
#: Names that point at a secret (a file, a socket) rather than hold one.
_POINTER_PARTS = frozenset({"SOCK", "PATH", "FILE", "DIR", "URL_BASE", "HOST", "PORT"})
#: The shortest environment value taken as a secret (shorter ones are flags and counts).
MIN_ENVIRONMENT_SECRET = 8


@functools.lru_cache(maxsize=4096)
def secret_environment_name(name: str) -> bool:
    """``name`` looks like an environment variable holding a secret (``OPENAI_API_KEY``)."""
    # cached: every Redactor (one per transcript written) reads the whole environment
    parts = set(re.split(r"[^A-Z0-9]+", name.upper()))
    return bool(parts & _SECRET_NAME_PARTS) and not parts & _POINTER_PARTS


#: (a copy of the environment's raw data, its secret values): see environment_secrets
_environment_seen: tuple[dict[Any, Any], tuple[str, ...]] | None = None


def environment_secrets() -> list[str]:
    """Values of the current environment whose variable name looks secret.

    Read afresh whenever ``os.environ`` changed since the last call (compared as a whole,
    at C speed): decoding every variable again cost about 50 us per transcript written.
    """
    global _environment_seen  # noqa: PLW0603 - one environment per process
    raw = getattr(os.environ, "_data", None)  # CPython's dict behind os.environ
    seen = _environment_seen
    if type(raw) is not dict:
        raw = None
    elif seen is not None and seen[0] == raw:
        return list(seen[1])
    # copied before reading: a change made meanwhile makes the next call read again
    copy = None if raw is None else dict(raw)
    values = tuple(
        value
        for name, value in os.environ.items()
        if len(value) >= MIN_ENVIRONMENT_SECRET and secret_environment_name(name)
    )
    if copy is not None:
        _environment_seen = (copy, values)
    return list(values)


def is_secret_field(key: str) -> bool:
    """A dictionary key whose value is a secret (``password``, ``api_key``, ``token``)."""
    return _FIELD_KEY.search(key) is not None


#: literal -> indices of the detectors it triggers
_BY_LITERAL: dict[str, tuple[int, ...]] = {}
for _index, _detector in enumerate(DETECTORS):
    for _literal in _detector.literals:
        _BY_LITERAL[_literal] = (*_BY_LITERAL.get(_literal, ()), _index)
_COMPILED = tuple(re.compile(d.pattern) for d in DETECTORS)
# No literal holds a line break or starts with white space, so a literal is in a text
# exactly when it is in one of the text's lines without its indentation: the prefilter may
# look at each distinct line once (see _literal_lines).
if any("\n" in lit or lit != lit.lstrip() for lit in _BY_LITERAL):  # pragma: no cover
    msg = "a detector literal holds a line break or starts with white space"
    raise RuntimeError(msg)
#: From this length on, the prefilter reads the text's distinct lines, not the whole text.
_DISTINCT_LINES_FROM = 2048


def _literal_lines(text: str) -> str:
    """Text holding each literal of the detectors exactly when ``text.lower()`` holds it.

    A transcript's JSON text repeats most of its lines (keys, closing brackets and the
    messages each request resends): its distinct lines, without their indentation, are
    about a fifth of it. No literal spans a line break or starts with white space, so each
    literal found in the text is found here; the line breaks joining the lines make no new
    ones, and lowering a line gives what lowering the whole text gives that line.
    """
    if len(text) < _DISTINCT_LINES_FROM:
        return text.lower()
    return "\n".join({line.lstrip() for line in set(text.split("\n"))}).lower()


class Scan:
    """The detectors plus literal secret values and extra patterns, compiled once.

    ``spans(text)`` yields ``(start, end, kind)`` of each secret in ``text`` in order
    (indices into ``text`` itself, normalization undone). One pass of a literal scan
    picks the detectors worth running; text holding none of their literals costs that
    pass only.
    """

    def __init__(
        self, values: tuple[str, ...], patterns: tuple[str, ...], *, detectors: bool
    ) -> None:
        self.values = values
        self.detectors = detectors
        self.patterns = re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None

    def spans(self, text: str) -> Iterator[tuple[int, int, str]]:
        """Each secret in ``text``: start, end (of the part to replace) and its kind."""
        if text.isascii():
            yield from self._matches(text)
            return
        plain, where = _normalized(text)
        if where is None:
            yield from self._matches(text)
            return
        for start, end, name in self._matches(plain):
            yield where[start], where[end - 1] + 1, name

    def _matches(self, text: str) -> Iterator[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        if self.detectors:
            # The literal prefilter: a substring test per literal (C string search, far
            # cheaper than one regular expression alternating all of them), then only the
            # detectors one of whose literals the text holds.
            lower = _literal_lines(text)
            chosen = {i for literal, hit in _BY_LITERAL.items() if literal in lower for i in hit}
            found.extend(span for index in sorted(chosen) for span in _detected(index, text))
        if self.patterns is not None:
            found.extend(
                (*m.span(), "a secret pattern")
                for m in self.patterns.finditer(text)
                if m.end() > m.start()
            )
        for value in self.values:
            at = text.find(value)
            while at >= 0:
                found.append((at, at + len(value), "a known secret value"))
                at = text.find(value, at + len(value))
        found.sort(key=lambda span: (span[0], -span[1]))
        end = -1
        for span in found:
            if span[0] >= end:
                yield span
                end = span[1]


def _detected(index: int, text: str) -> Iterator[tuple[int, int, str]]:
    detector = DETECTORS[index]
    for match in _COMPILED[index].finditer(text):
        start, end = match.span("v") if "v" in match.re.groupindex else (-1, -1)
        if start < 0:
            start, end = match.span()
        if end > start and (detector.check is None or detector.check(text[start:end])):
            yield start, end, detector.name


def _normalized(text: str) -> tuple[str, list[int] | None]:
    """``text`` without invisible characters, NFKC per character, and where each output
    character came from (None when normalization changes nothing)."""
    if _INVISIBLE.search(text) is None and unicodedata.is_normalized("NFKC", text):
        return text, None
    out: list[str] = []
    where: list[int] = []
    for index, char in enumerate(text):
        if _INVISIBLE.match(char):
            continue
        normal = char if char.isascii() else unicodedata.normalize("NFKC", char)
        out.append(normal)
        where.extend([index] * len(normal))
    return "".join(out), where
