"""What the cheap transcript-writing paths keep (never timing: benchmarks/ measures speed).

The indented JSON writer gives exactly the standard library's text, the recorder's event
models built on first read are those ``model_construct`` built, and stale temporaries are
cleaned once per folder (all dead writers' ones, never a live writer's).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim import _files
from loopsim._transcript._jsontext import dumps_indented

_keys = st.one_of(
    st.text(max_size=8),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and infinities too: written as the standard library writes them
    st.text(),  # control characters, quotes, backslashes, non-ASCII, surrogates
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
    ),
    max_leaves=30,
)


@given(value=_values)
def test_the_indented_writer_is_the_standard_librarys_text(value: Any) -> None:
    assert dumps_indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_the_indented_writer_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"a": [object()]})
    with pytest.raises(TypeError, match="keys must be"):
        dumps_indented({(1, 2): 3})


def test_recorded_events_built_on_read_equal_validated_ones() -> None:
    agent = loopsim.Agent(loopsim.ScriptedChatClient(["hi", "there"]), name="a")
    recorder = loopsim.Recorder(scenario="lazy")

    async def main() -> None:
        await agent.run("one")
        recorder.events  # noqa: B018 - a read in the middle: later events are added after it
        await agent.run("two")

    loopsim.simulate(main, trace=recorder.trace, wall_clock=False)
    events = recorder.events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len(events) == 6
    for event in events:
        assert event == loopsim.TranscriptEvent.model_validate(event.to_dict())
        assert event.model_fields_set == {"seq", "time", "kind", "data"}
    text = recorder.transcript.to_json()
    assert loopsim.Transcript.from_json(text).to_json() == text


@pytest.mark.skipif(os.name != "posix", reason="pid checks are POSIX")
def test_stale_temporaries_are_cleaned_once_per_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = 2**22 + 12345  # above the default pid_max: no such process
    stale_mine = tmp_path / f".a.txt.{dead}.0.tmp"
    stale_other = tmp_path / f".b.txt.{dead}.1.tmp"  # another target's: removed as well
    live = tmp_path / f".c.txt.{os.getpid()}.7.tmp"  # this process's: kept
    for path in (stale_mine, stale_other, live):
        path.write_text("x")
    scans: list[str] = []
    real_scandir = os.scandir

    def counting(path: Any) -> Any:
        scans.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    _files.write_atomic(tmp_path / "a.txt", "1")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a.txt", live.name])
    later = tmp_path / f".d.txt.{dead}.2.tmp"
    later.write_text("x")
    _files.write_atomic(tmp_path / "b.txt", "2")
    _files.write_atomic(tmp_path / "a.txt", "3")
    assert scans == [str(tmp_path)]  # one scan for three writes
    assert later.exists()  # left for the next process's first write
    assert (tmp_path / "a.txt").read_text() == "3"
