"""What every pytest process (each xdist worker too) repeats stays cheap, and unchanged.

Every xdist worker collects the whole suite and imports loopsim again. Collection reads
no scenario file (a file is loaded when its item runs), and loopsim's own modules are
imported by Python's loader instead of pytest's assertion rewriter, while test files,
conftest files and other plugins are rewritten as before. Nothing here times anything
(benchmarks/bench_parallel.py measures).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PLAIN = (
    "version: 1\n"
    "name: {name}\n"
    "agents:\n  writer: {{script: [{reply}]}}\n"
    "parent: {{agent: writer}}\n"
    "steps: [{{run: go}}]\n"
    "expect: {{response: {{contains: {expected}}}}}\n"
)

#: a conftest that notes every scenario file opened while pytest collects
WATCH_OPENS = """
import builtins, io, json, pathlib
import pytest

OPENED = []

@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    real_open, real_io_open, real_path_open = builtins.open, io.open, pathlib.Path.open
    def note(file):
        if str(file).endswith(".loopsim.yaml"):
            OPENED.append(pathlib.Path(file).name)
    def watched_open(file, *args, **kwargs):
        note(file)
        return real_open(file, *args, **kwargs)
    def watched_path_open(self, *args, **kwargs):
        note(self)
        return real_path_open(self, *args, **kwargs)
    builtins.open = io.open = watched_open
    pathlib.Path.open = watched_path_open
    try:
        return (yield)
    finally:
        builtins.open, io.open, pathlib.Path.open = real_open, real_io_open, real_path_open
        pathlib.Path("opened.json").write_text(json.dumps(sorted(OPENED)))
"""


def _scenario(name: str, reply: str, expected: str | None = None) -> str:
    return PLAIN.format(name=name, reply=reply, expected=expected or reply)


def test_collection_opens_no_scenario_file_and_clashing_names_still_split(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    (pytester.path / "a").mkdir()
    (pytester.path / "b").mkdir()
    (pytester.path / "a" / "one.loopsim.yaml").write_text(_scenario("checkout", "first"))
    (pytester.path / "b" / "two.loopsim.yaml").write_text(_scenario("checkout", "second"))
    (pytester.path / "c.loopsim.yaml").write_text(_scenario("alone", "third"))
    pytester.makeconftest(WATCH_OPENS)

    pytester.runpytest("--collect-only", "-q").assert_outcomes()
    assert json.loads((pytester.path / "opened.json").read_text()) == []

    # the names are worked out when a transcript is written: a clash still gets two files
    out = tmp_path / "transcripts"
    pytester.runpytest(f"--loopsim-transcripts={out}").assert_outcomes(passed=3)
    assert json.loads((pytester.path / "opened.json").read_text()) == []
    assert sorted(p.name for p in out.glob("*.transcript.json")) == [
        "alone.transcript.json",
        "checkout@a.one.transcript.json",
        "checkout@b.two.transcript.json",
    ]


def test_failures_of_clashing_names_under_xdist_keep_a_transcript_each(
    pytester: pytest.Pytester,
) -> None:
    # each worker works the names out from its own collection: both agree on them
    (pytester.path / "a").mkdir()
    (pytester.path / "b").mkdir()
    (pytester.path / "a" / "one.loopsim.yaml").write_text(_scenario("checkout", "x", "first"))
    (pytester.path / "b" / "two.loopsim.yaml").write_text(_scenario("checkout", "y", "second"))
    result = pytester.runpytest_subprocess("-n", "2")
    result.assert_outcomes(failed=2)
    folder = pytester.path / ".loopsim" / "transcripts"
    assert sorted(p.name for p in folder.glob("*.transcript.json")) == [
        "checkout@a.one.transcript.json",
        "checkout@b.two.transcript.json",
    ]


#: a test module that reports how loopsim's modules and itself were loaded
LOADERS = """
import json, pathlib, sys

def test_loaders():
    import loopsim._scenario
    import loopsim._scenario._build
    hook = next(h for h in sys.meta_path if type(h).__name__ == "AssertionRewritingHook")
    found = {
        "scenario": type(loopsim._scenario._build.__loader__).__name__,
        "this test": type(sys.modules[__name__].__loader__).__name__,
        "marked": sorted(hook._must_rewrite),
    }
    pathlib.Path("loaders.json").write_text(json.dumps(found))

def test_asserts_here_still_show_their_values():
    numbers = [1, 2]
    assert numbers == [1, 3]
"""


@pytest.mark.parametrize(
    "conftest", ["", "import pytest\npytest.register_assert_rewrite('loopsim')\n"]
)
def test_loopsim_modules_are_not_assertion_rewritten_but_tests_are(
    pytester: pytest.Pytester, conftest: str
) -> None:
    pytester.makepyfile(test_loaders=LOADERS)
    if conftest:
        pytester.makeconftest(conftest)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*assert [[]1, 2[]] == [[]1, 3[]]*"])  # rewritten
    found = json.loads((pytester.path / "loaders.json").read_text())
    assert found["this test"] == "AssertionRewritingHook"
    assert "hypothesis" in found["marked"]  # other plugins keep their mark
    if conftest:  # a conftest that asks for it gets loopsim rewritten again
        assert "loopsim" in found["marked"]
        assert found["scenario"] == "AssertionRewritingHook"
    else:
        assert "loopsim" not in found["marked"]
        assert found["scenario"] == "SourceFileLoader"
