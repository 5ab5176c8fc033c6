"""What every pytest process (each xdist worker too) repeats stays cheap, and unchanged.

Every xdist worker collects the whole suite and imports loopsim again. Collection reads
no scenario file (a file is loaded when its item runs), and loopsim's own modules are
imported by Python's loader instead of pytest's assertion rewriter, while test files,
conftest files and other plugins are rewritten as before. Nothing here times anything
(benchmarks/bench_parallel.py measures).
"""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

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
