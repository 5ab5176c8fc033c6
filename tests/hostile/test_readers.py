"""Bounded readers: reference bombs, FIFOs, surrogates, broken and unwritable cassettes.

A 3.6 MB transcript built of references was refused only after 13 s and 3.1 GB; a FIFO
given as a transcript or cassette hung the reader; a lone surrogate crashed
``loopsim report``; a broken or unwritable cassette failed the run inside a pytest
traceback of 900-1,000 lines.
"""

from __future__ import annotations

import json
import os
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from _cli import loopsim_cli

import loopsim
from loopsim import TranscriptError

pytest_plugins = ["pytester"]

MESSAGE = {"role": "user", "contents": [{"type": "text", "text": "x"}], "author_name": None}


def _request(seq: int, messages: list[Any]) -> dict[str, Any]:
    data = {"agent": "a", "session": "s", "messages": messages, "tools": [], "instructions": None}
    return {"seq": seq, "time": 0.0, "kind": "model_request", "data": data}


def _bomb(events: int) -> str:
    """Each request refers to the whole previous one plus one new message (quadratic)."""
    items = [_request(1, [MESSAGE])]
    items += [
        _request(seq, [{"ref": seq - 1, "start": 0, "count": seq - 1}, MESSAGE])
        for seq in range(2, events)
    ]
    body = {"format": "loopsim.transcript", "version": 2, "seed": 0, "events": items}
    return json.dumps(body)


def test_a_reference_bomb_is_refused_before_it_takes_the_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.transcript.json"
    path.write_text(_bomb(12_000), encoding="utf-8")  # 3.4 MB, 72 million messages expanded
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(TranscriptError, match="more than 8,000,000 messages"):
            loopsim.read_transcript(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - started
    assert peak < 100 * 2**20, f"peak {peak / 2**20:.0f} MB"
    assert elapsed < 20  # 1-2 s alone; tracemalloc and a shared machine slow it down


def test_a_request_past_the_bound_is_refused_without_being_expanded() -> None:
    items = [_request(1, [MESSAGE] * 10), _request(2, [{"ref": 1, "start": 0, "count": 10}] * 5)]
    text = json.dumps({"format": "loopsim.transcript", "version": 2, "events": items})
    limits = loopsim.TranscriptLimits(max_messages=40)
    with pytest.raises(TranscriptError, match="more than 40 messages"):
        loopsim.Transcript.from_json(text, limits=limits)
    assert loopsim.Transcript.from_json(text, limits=loopsim.TranscriptLimits(max_messages=60))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.transcript.json"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def read() -> None:
        try:
            loopsim.read_transcript(fifo)
        except BaseException as exc:
            done.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # unblock the reader so the test process can end
        with fifo.open("w"):
            pass
        pytest.fail("read_transcript blocked on a FIFO")
    assert isinstance(done[0], TranscriptError)
    assert "not a regular file (a FIFO)" in str(done[0])
    assert str(fifo) in str(done[0])


def test_a_directory_and_a_device_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="a directory"):
        loopsim.read_transcript(tmp_path)
    if Path("/dev/zero").exists():
        with pytest.raises(TranscriptError, match="a character device"):
            loopsim.read_transcript("/dev/zero")


def _with_surrogates(tmp_path: Path) -> Path:
    agent = loopsim.Agent(loopsim.ScriptedChatClient(["bad X text"]), name="a")
    _, transcript = loopsim.record(agent.run, "hi", scenario="s")
    text = transcript.to_json().replace("bad X text", "bad \\udc80 text \\ud800")
    path = tmp_path / "s.transcript.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_report_handles_surrogates(tmp_path: Path) -> None:
    path = _with_surrogates(tmp_path)
    out = tmp_path / "report.html"
    done = loopsim_cli("report", str(path), "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    page = out.read_text(encoding="utf-8")
    assert "bad \ufffd text \ufffd" in page
    for command in ("show", "replay"):
        assert "Traceback" not in loopsim_cli(command, str(path), cwd=tmp_path).stderr


MODELS = """
import loopsim


def real(name):
    return loopsim.FunctionChatClient(lambda messages, options: "hello", name=name)
"""

SCENARIO = """version: 1
agents:
  greeter:
    model: hostile_readers_models:real
parent: {agent: greeter}
steps:
  - run: hi
expect:
  response: {contains: hello}
"""


def _suite(pytester: pytest.Pytester) -> Path:
    (pytester.path / "hostile_readers_models.py").write_text(MODELS, encoding="utf-8")
    (pytester.path / "greet.loopsim.yaml").write_text(SCENARIO, encoding="utf-8")
    folder = pytester.path / "cassettes"
    folder.mkdir()
    return folder / "greet.transcript.json"


def _short_failure(result: pytest.RunResult, *needles: str) -> None:
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    for needle in needles:
        assert needle in out
    assert "Traceback" not in out
    assert "def runtest" not in out
    failure = out.split("FAILURES", 1)[1].split("short test summary", 1)[0]
    assert len(failure.splitlines()) < 12, failure


def test_a_broken_cassette_is_a_few_lines_naming_the_file(pytester: pytest.Pytester) -> None:
    cassette = _suite(pytester)
    cassette.write_text('{"format": "loopsim.transcript", "version": 2, "events": [', "utf-8")
    _short_failure(pytester.runpytest("-p", "no:cacheprovider"), "cassette:", str(cassette))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_cassette_is_a_few_lines(pytester: pytest.Pytester) -> None:
    cassette = _suite(pytester)
    os.mkfifo(cassette)
    _short_failure(pytester.runpytest("-p", "no:cacheprovider"), "not a regular file (a FIFO)")


@pytest.mark.skipif(
    os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root writes anywhere"
)
def test_an_unwritable_cassette_folder_is_a_few_lines(pytester: pytest.Pytester) -> None:
    cassette = _suite(pytester)
    cassette.parent.chmod(0o500)
    try:
        result = pytester.runpytest("-p", "no:cacheprovider", "--loopsim-record-mode=once")
    finally:
        cassette.parent.chmod(0o700)
    _short_failure(result, "cannot write the cassette", str(cassette))


def test_a_cassette_that_is_a_directory_is_a_few_lines(pytester: pytest.Pytester) -> None:
    cassette = _suite(pytester)
    cassette.mkdir()  # exists, not a file: neither readable nor writable as a cassette
    _short_failure(pytester.runpytest("-p", "no:cacheprovider"), "not a regular file (a directory)")
