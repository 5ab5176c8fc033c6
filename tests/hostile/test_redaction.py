"""Secrets in a recording: every kind of the hostile sweep's corpus (and more) is redacted.

A recorded cassette whose model reply, tool arguments and tool result hold secrets of many
kinds keeps none of them; written without redaction, each one alone is refused with its
line in the file. The secrets are assembled at run time so that this file itself holds
none a scanner would flag.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import FunctionCallContent, Message, RecordingChatClient, ScriptedChatClient
from loopsim._clients._secrets import Redactor


def _wide(text: str) -> str:
    """``text`` in full-width letters (NFKC folds them back to ASCII)."""
    return "".join(chr(ord(c) + 0xFEE0) for c in text)


_A = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_BASIC = base64.b64encode(b"admin:hunter2-hunter2").decode()
_JWT = ".".join(
    base64.urlsafe_b64encode(part.encode()).decode().rstrip("=")
    for part in ('{"alg":"HS256","typ":"JWT"}', '{"sub":"1234567890","name":"x"}', "signature!")
)
_PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + _A + "\n-----END RSA PRIVATE KEY-----"

#: (kind, text holding the secret, the secret itself: what must not reach the file)
CORPUS: list[tuple[str, str, str]] = [
    # The 11 kinds that survived redaction in the sweep (issue 26).
    ("http basic", f"Authorization: Basic {_BASIC}", _BASIC),
    (
        "aws secret",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG",
    ),
    ("google api key", "key AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "SyD-9tSrke72PouQMnMX"),
    ("hugging face", "token hf_" + _A[:34], "hf_" + _A[:34]),
    ("stripe live", "sk_" + "live_" + _A[10:40], "live_" + _A[10:40]),
    ("bare jwt", _JWT, _JWT.split(".")[1]),
    ("pem header", _PEM, "MIIEowIBAAKCAQEA"),
    ("url password", "postgres://app:s3cr3t-pw@db.internal:5432/app", "s3cr3t-pw"),
    ("password field", "password: correct-horse-battery", "correct-horse-battery"),
    (
        "environment value",
        "the deploy used LoopsimEnvValue-7f3a9c2e1b",
        "LoopsimEnvValue-7f3a9c2e1b",
    ),
    ("zero-width sk-", "sk-\u200bproj-" + _A[:30], _A[:30]),
    # The kinds redaction already caught.
    ("openai key", "sk-proj-" + _A[5:45], _A[5:45]),
    ("bearer", "Authorization: Bearer " + _A[3:40], _A[3:40]),
    ("api key field", "api_key=" + _A[20:50], _A[20:50]),
    ("aws access key id", "AKIA" + "IOSFODNN7EXAMPL2", "IOSFODNN7EXAMPL2"),
    ("github classic", "ghp_" + _A[:36], _A[:36]),
    ("github fine-grained", "github_pat_" + "11A" + _A[:50], _A[:50]),
    ("slack bot", "xoxb-" + "1234567890-" + _A[:24], _A[:24]),
    ("slack webhook", "https://hooks.slack.com/services/T000/B000/" + _A[:24], _A[:24]),
    ("secret field", '{"client_secret": "' + _A[7:31] + '"}', _A[7:31]),
    # Our own.
    (
        "full-width openai key",
        _wide("sk-abcdefghijklmnopqrstuvwxyz"),
        _wide("abcdefghij"),
    ),
    ("soft hyphen in github", "gh\u00adp_" + _A[14:50], _A[14:50]),
    (
        "azure storage",
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + _A * 2 + "==",
        _A * 2,
    ),
    ("azure sas", "https://x.blob.core.windows.net/c?sv=2022&sig=" + _A[:40] + "%3D", _A[:40]),
    ("azure client secret", "abc8Q~" + _A[:34], _A[:34]),
    ("google oauth", "ya29." + _A[:40], _A[:40]),
    ("gitlab", "glpat-" + _A[:24], _A[:24]),
    ("npm", "npm_" + _A[:36], _A[:36]),
    ("stripe webhook", "whsec_" + _A[:32], _A[:32]),
    ("proxy authorization digest", "Proxy-Authorization: Digest " + _A[:20], _A[:20]),
    ("token json in a string", '{"token": "' + _A[30:60] + '"}', _A[30:60]),
    (
        "ssh key",
        "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA" + _A,
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
]
ENV_NAME = "LOOPSIM_TEST_DEPLOY_TOKEN"
ENV_VALUE = "LoopsimEnvValue-7f3a9c2e1b"


def _program() -> tuple[RecordingChatClient, Any]:
    everything = " | ".join(text for _, text, _ in CORPUS)
    arguments = {"note": everything, "password": "plain-tool-password", "nested": [everything]}
    call = Message(
        "assistant", [FunctionCallContent(call_id="c1", name="store", arguments=arguments)]
    )
    recording = RecordingChatClient(ScriptedChatClient([call, everything]), agent_name="a")

    def store(note: str, password: str, nested: list[str]) -> str:
        return f"stored {note} with {password} and {len(nested)} more: {everything}"

    agent = loopsim.Agent(recording, name="a", tools=[loopsim.tool(store)])
    return recording, agent


def test_the_whole_corpus_is_redacted_in_the_written_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    recording, agent = _program()
    reply, transcript = loopsim.record(agent.run, "remember these")
    assert all(secret in reply.text for _, _, secret in CORPUS)  # the live run saw them all
    for written in (transcript, loopsim.Transcript.from_turns(recording.turns)):
        text = loopsim.write_transcript(tmp_path / "t.transcript.json", written).read_text("utf-8")
        survivors = [kind for kind, _, secret in CORPUS if secret in text]
        assert survivors == []
        assert "plain-tool-password" not in text  # a tool's password argument
        assert "[REDACTED]" in text
    assert len(CORPUS) >= 30


@pytest.mark.parametrize(("kind", "text", "secret"), CORPUS, ids=[k for k, _, _ in CORPUS])
def test_each_kind_alone_is_refused_at_write_with_its_location(
    kind: str, text: str, secret: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    agent = loopsim.Agent(ScriptedChatClient([f"fine.\n{text}"]), name="a")
    _, transcript = loopsim.record(agent.run, "hi")  # no recording client: nothing redacted
    target = tmp_path / "leak.transcript.json"
    with pytest.raises(loopsim.TranscriptError, match="looks like a secret") as info:
        loopsim.write_transcript(target, transcript)
    message = str(info.value)
    line = next(
        n
        for n, row in enumerate(transcript.to_json().splitlines(), 1)
        if secret[:6] in row or secret[-6:] in row
    )
    assert f"line {line}, column " in message
    assert "(event seq " in message
    assert str(target) in message
    assert secret not in message
    assert not target.exists()


@pytest.mark.parametrize(("kind", "text", "secret"), CORPUS, ids=[k for k, _, _ in CORPUS])
def test_each_kind_is_refused_in_a_long_transcript_of_repeated_lines(
    kind: str, text: str, secret: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long transcript repeats most of its lines; the scan's literal prefilter reads each
    # distinct line once from 2 kB on. The secret is in the last reply, after many lines
    # like its own: it must still be found, wherever the repeats are.
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    turns = 12
    agent = loopsim.Agent(
        ScriptedChatClient([*(["draft"] * (turns - 1)), f"fine.\n{text}"]), name="a"
    )

    async def program() -> None:
        for _ in range(turns):
            await agent.run("hi")

    _, transcript = loopsim.record(program)
    assert len(transcript.to_json()) > 4 * 2048  # the long-text path of the prefilter
    target = tmp_path / "leak.transcript.json"
    with pytest.raises(loopsim.TranscriptError, match="looks like a secret") as info:
        loopsim.write_transcript(target, transcript)
    assert f"(event seq {len(transcript.events)})" in str(info.value)  # the last reply
    assert not target.exists()


def test_ordinary_text_is_kept(tmp_path: Path) -> None:
    ordinary = (
        "max_tokens: 100, input_tokens=5 and a basic question; the key is obvious; "
        "see https://example.com/a?b=c; task-1234567890123456789012; draws 40 laws; "
        "continuation_token: 12345; \ufb01ne caf\u00e9; AIza"
    )
    assert Redactor().text(ordinary) == ordinary
    agent = loopsim.Agent(ScriptedChatClient([ordinary]), name="a")
    _, transcript = loopsim.record(agent.run, "hi")
    loopsim.write_transcript(tmp_path / "ok.transcript.json", transcript)


def test_usage_and_pagination_fields_are_not_secrets() -> None:
    data = {"usage": {"input_token_count": 5, "total_token_count": 9}, "page_token": "p2"}
    assert Redactor().redact(data) == data
    assert Redactor().redact({"Password": 1234, "auth_token": "t", "ok": True}) == {
        "Password": "[REDACTED]",
        "auth_token": "[REDACTED]",
        "ok": True,
    }


_INVISIBLE = st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"])


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(
        [c for c in CORPUS if c[0] in ("openai key", "github classic", "hugging face")]
    ),
    cuts=st.lists(st.tuples(st.integers(0, 60), _INVISIBLE), max_size=4),
    before=st.text(alphabet=" .,:;\n", max_size=3),
)
def test_invisible_characters_anywhere_in_a_key_do_not_hide_it(
    kind: tuple[str, str, str], cuts: list[tuple[int, str]], before: str
) -> None:
    _, text, secret = kind
    for where, char in sorted(cuts, reverse=True):
        at = min(where, len(text))
        text = text[:at] + char + text[at:]
    redacted = Redactor().text(before + text)
    plain = "".join(c for c in redacted if c not in "\u200b\u200c\u200d\u2060\ufeff\u00ad")
    assert secret not in plain
    assert plain.startswith(before)
    assert Redactor().find(json.dumps(before + text, ensure_ascii=False)) is not None


def test_the_environment_is_read_again_when_it_changes_between_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The environment's secret values are remembered between writes (reading them cost
    # a transcript about 50 us); a variable set, changed or removed after a write is seen
    # by the next one all the same.
    agent = loopsim.Agent(ScriptedChatClient([f"it is {ENV_VALUE}"] * 4), name="a")
    _, transcript = loopsim.record(agent.run, "hi")
    target = tmp_path / "t.transcript.json"
    monkeypatch.delenv(ENV_NAME, raising=False)
    loopsim.write_transcript(target, transcript)  # not a secret yet
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    with pytest.raises(loopsim.TranscriptError, match="a known secret value"):
        loopsim.write_transcript(target, transcript)
    monkeypatch.setenv(ENV_NAME, "another-long-value")
    loopsim.write_transcript(target, transcript)
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    with pytest.raises(loopsim.TranscriptError, match="a known secret value"):
        loopsim.write_transcript(target, transcript)
    monkeypatch.delenv(ENV_NAME)
    loopsim.write_transcript(target, transcript)


def test_a_file_already_holding_the_leaking_text_does_not_let_it_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # write_atomic keeps a file that already holds the bytes; the scan comes first, so a
    # planted copy of a leaking transcript is no way around it.
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    agent = loopsim.Agent(ScriptedChatClient([f"it is {ENV_VALUE}"]), name="a")
    _, transcript = loopsim.record(agent.run, "hi")
    target = tmp_path / "t.transcript.json"
    target.write_text(transcript.to_json(), encoding="utf-8")
    with pytest.raises(loopsim.TranscriptError, match="a known secret value"):
        loopsim.write_transcript(target, transcript)
