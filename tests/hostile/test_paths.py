"""No path from user text: file names made from scenario, agent, model and test names.

A scenario ``name`` such as ``../../../escaped`` once made record mode ``once`` write the
cassette three folders above ``cassettes/`` and mode ``none`` read it from there. Every
writer and reader that names a file after user text is run here with hostile names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim._files import UnsafePathError, check_inside, file_in, safe_file_stem
from loopsim._scenario import load_scenario_text, run_scenario
from loopsim._scenario._check import snapshot_path
from loopsim._scenario._model import cassette_path as scenario_cassette
from loopsim._transcript._cassette import cassette_path as cassette_of_test

pytest_plugins = ["pytester"]

HOSTILE = [
    "../../../escaped",
    "..",
    ".",
    "/etc/passwd",
    "C:\\Windows\\win.ini",
    "\\\\server\\share\\x",
    "a/../../b",
    "CON",
    "nul.txt",
    "com1",
    "LPT9.log",
    "trailing.",
    ".hidden",
    "nul\x00byte",
    "x" * 400,
    "\udc80surrogate",
    "é/../../é",
    "",
]

RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"{d}{n}" for d in ("COM", "LPT") for n in range(10))}

MODELS = """
import loopsim


def real(name):
    return loopsim.FunctionChatClient(lambda messages, options: "hello", name=name)
"""


def scenario_text(name: str) -> str:
    return f"""version: 1
name: {name!r}
agents:
  greeter:
    model: hostile_paths_models:real
parent: {{agent: greeter}}
steps:
  - run: hi
expect:
  response: {{contains: hello}}
"""


def _inside(folder: Path, target: Path) -> bool:
    return target.resolve().parent == folder.resolve()


@pytest.mark.parametrize("name", HOSTILE)
def test_a_file_name_from_user_text_stays_in_its_folder(name: str, tmp_path: Path) -> None:
    stem = safe_file_stem(name)
    assert "/" not in stem
    assert "\\" not in stem
    assert not stem.startswith(".")
    assert not stem.endswith(".")
    assert stem.split(".")[0].upper() not in RESERVED
    assert len(f"{stem}.transcript.json".encode()) <= 255
    assert _inside(tmp_path, file_in(tmp_path, name, ".transcript.json"))


@settings(max_examples=200, deadline=None)
@given(name=st.text(max_size=300))
def test_any_text_makes_one_file_in_the_folder(name: str) -> None:
    folder = Path("/srv/cassettes")
    target = file_in(folder, name, ".transcript.json")
    assert target.parent == folder
    assert target.name not in ("", ".", "..")
    stem = target.name.removesuffix(".transcript.json")
    assert stem.split(".")[0].upper() not in RESERVED


@pytest.mark.parametrize("name", ["../../../escaped", "/tmp/abs", "CON"])
def test_scenario_writers_and_readers_with_a_hostile_name(name: str, tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "hostile_paths_models.py").write_text(MODELS, encoding="utf-8")
    path = folder / "s.loopsim.yaml"
    path.write_text(scenario_text(name), encoding="utf-8")
    loaded = load_scenario_text(path.read_text(encoding="utf-8"), path=path)
    assert _inside(folder / "cassettes", scenario_cassette(loaded) or folder)
    assert _inside(folder / "__snapshots__", snapshot_path(loaded))
    scripted = load_scenario_text(
        "version: 1\nname: " + repr(name) + "\nagents:\n  a: {script: [done]}\n"
        "parent: {agent: a}\nsteps:\n  - run: hi\n",
        path=path,
    )
    result = run_scenario(scripted)
    written = result.write_transcript(tmp_path / "out")
    assert written is not None
    assert _inside(tmp_path / "out", written)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "suite"]


def test_cassettes_of_hostile_test_names_stay_in_the_folder(tmp_path: Path) -> None:
    test_file = tmp_path / "test_x.py"
    for name in ["test_a[../../../escaped]", "test_b[/etc/passwd]", "test_c[..]", "CON"]:
        assert _inside(tmp_path / "cassettes" / "test_x", cassette_of_test(test_file, name))


def test_a_planted_symlink_cannot_lead_a_cassette_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside.transcript.json"
    outside.write_text("{}", encoding="utf-8")
    folder = tmp_path / "cassettes"
    folder.mkdir()
    (folder / "greet.transcript.json").symlink_to(outside)
    with pytest.raises(UnsafePathError, match="outside"):
        file_in(folder, "greet", ".transcript.json")


@pytest.mark.parametrize("there", ["nothing", "file", "folder", "link in", "link out", "loop"])
@pytest.mark.parametrize("name", ["greet", *HOSTILE[:6]])
def test_file_in_refuses_exactly_what_resolving_both_paths_refuses(
    tmp_path: Path, there: str, name: str
) -> None:
    # file_in resolves neither path when the file is missing or not a link; its verdict
    # must still be the full check's, whatever is at the name, the folder itself a link.
    real = tmp_path / "real"
    real.mkdir()
    folder = tmp_path / "folder"
    folder.symlink_to(real)
    leaf = real / f"{safe_file_stem(name)}.transcript.json"
    outside = tmp_path / "outside.json"
    outside.write_text("{}", encoding="utf-8")
    if there == "file":
        leaf.write_text("{}", encoding="utf-8")
    elif there == "folder":
        leaf.mkdir()
    elif there == "link in":
        (real / "other.json").write_text("{}", encoding="utf-8")
        leaf.symlink_to(real / "other.json")
    elif there == "link out":
        leaf.symlink_to(outside)
    elif there == "loop":
        leaf.symlink_to(leaf)
    full: Exception | None = None
    try:
        check_inside(folder, folder / leaf.name)
    except (UnsafePathError, RuntimeError) as exc:  # a link loop: RuntimeError on 3.11
        full = exc
    if full is None:
        assert file_in(folder, name, ".transcript.json") == folder / leaf.name
    else:
        with pytest.raises(type(full)):
            file_in(folder, name, ".transcript.json")
    assert (there == "link out") == isinstance(full, UnsafePathError)


def test_record_once_then_replay_with_a_hostile_scenario_name(pytester: pytest.Pytester) -> None:
    (pytester.path / "hostile_paths_models.py").write_text(MODELS, encoding="utf-8")
    (pytester.path / "s.loopsim.yaml").write_text(
        scenario_text("../../../escaped"), encoding="utf-8"
    )
    above = pytester.path.parent.parent
    before = sorted(p.name for p in above.iterdir())
    pytester.runpytest("--loopsim-record-mode=once", "-p", "no:cacheprovider").assert_outcomes(
        passed=1
    )
    written = list((pytester.path / "cassettes").iterdir())
    assert [p.name for p in written] == [safe_file_stem("../../../escaped") + ".transcript.json"]
    assert sorted(p.name for p in above.iterdir()) == before  # nothing landed up there
    assert not (pytester.path / "escaped.transcript.json").exists()
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)  # replays from it


def test_a_symlinked_cassette_fails_the_item_in_a_few_lines(pytester: pytest.Pytester) -> None:
    (pytester.path / "hostile_paths_models.py").write_text(MODELS, encoding="utf-8")
    (pytester.path / "greet.loopsim.yaml").write_text(scenario_text("greet"), encoding="utf-8")
    elsewhere = pytester.path.parent / "elsewhere.transcript.json"
    elsewhere.write_text("{}", encoding="utf-8")
    (pytester.path / "cassettes").mkdir()
    (pytester.path / "cassettes" / "greet.transcript.json").symlink_to(elsewhere)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "cassette: refusing to use" in out
    assert "outside" in out
    assert "Traceback" not in out
    assert "def runtest" not in out
