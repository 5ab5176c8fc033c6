"""The syrupy extension: stable names, readable text, a diff on change."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TEST_FILE = """
import pytest
import loopsim
from loopsim.testing import TranscriptSnapshotExtension

def transcript(answer):
    agent = loopsim.Agent(loopsim.ScriptedChatClient([answer]), name="a")
    return loopsim.record(agent.run, "hello", scenario=answer)[1]

@pytest.fixture
def snap(snapshot):
    return snapshot.use_extension(TranscriptSnapshotExtension)

@pytest.mark.parametrize("answer", ["hi", "yo"])
def test_param(snap, answer):
    assert transcript(ANSWER or answer) == snap

def test_named(snap):
    for answer in ["two", "one"]:
        assert transcript(answer) == snap(name=answer)

def test_unnamed_twice(snap):
    assert transcript("x") == snap
    assert transcript("y") == snap
"""


def write(pytester: pytest.Pytester, answer: str = "None") -> None:
    pytester.makepyfile(test_snap=TEST_FILE.replace("ANSWER", answer))


def test_snapshots_are_text_files_with_stable_names(pytester: pytest.Pytester) -> None:
    write(pytester)
    result = pytester.runpytest("--snapshot-update", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    folder = pytester.path / "__snapshots__" / "test_snap"
    assert sorted(p.name for p in folder.iterdir()) == [
        "test_named[one].transcript.txt",
        "test_named[two].transcript.txt",
        "test_param[hi].transcript.txt",
        "test_param[yo].transcript.txt",
        "test_unnamed_twice.transcript.txt",  # the first, unnamed one is fine
    ]
    text = (folder / "test_param[hi].transcript.txt").read_text(encoding="utf-8")
    assert (
        text.splitlines()[-1] == '           model_response        a  session-0001  assistant: "hi"'
    )
    result.stdout.fnmatch_lines(["*name each one*"])

    again = pytester.runpytest("-p", "no:cacheprovider", "-k", "not unnamed")
    again.assert_outcomes(passed=3)


def test_a_changed_behaviour_fails_with_a_diff(pytester: pytest.Pytester) -> None:
    write(pytester)
    pytester.runpytest("--snapshot-update", "-p", "no:cacheprovider", "-k", "param")
    write(pytester, answer='"changed"')
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "param")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(['*assistant: "changed"*'])


def test_serialize_rejects_other_data() -> None:
    from loopsim.testing import TranscriptSnapshotExtension

    with pytest.raises(TypeError, match=r"snapshots a loopsim\.Transcript"):
        TranscriptSnapshotExtension().serialize(42)
