"""The collector's view during a session of scenario files: after the first scenario item of
a session of 100 items or more, what is alive is frozen out of full passes (gc.freeze);
garbage made later is still collected; the objects come back into view at the end of the
session; a session without scenario files, or a small one, is left alone."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

ONE_REPLY = """\
version: 1
agents:
  writer: {script: [hello]}
parent: {agent: writer}
steps: [{run: hi}]
expect: {response: {equals: hello}}
"""

AFTER = """\
import gc
import weakref

import pytest


@pytest.mark.parametrize("i", range(100))
def test_more(i):
    pass


class Node:
    pass


def test_after():
    print("FROZEN_DURING", gc.get_freeze_count())
    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: only the collector frees it
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert gone() is None
"""

CONFTEST = """\
import atexit
import gc

atexit.register(lambda: print("FROZEN_AT_EXIT", gc.get_freeze_count()))
"""


def test_a_session_of_scenarios_freezes_after_the_first_and_unfreezes_at_the_end(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".loopsim.yaml", a=ONE_REPLY)
    pytester.makepyfile(test_b=AFTER, conftest=CONFTEST)
    result = pytester.runpytest_subprocess("-s", "-p", "no:randomly")
    result.assert_outcomes(passed=102)
    during = next(line for line in result.outlines if "FROZEN_DURING" in line)
    assert int(during.split("FROZEN_DURING")[1].split()[0]) > 1000
    result.stdout.fnmatch_lines(["FROZEN_AT_EXIT 0"])


def test_a_session_without_scenarios_is_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_b=AFTER, conftest=CONFTEST)
    result = pytester.runpytest_subprocess("-s", "-p", "no:randomly")
    result.assert_outcomes(passed=101)
    result.stdout.fnmatch_lines(["*FROZEN_DURING 0*", "FROZEN_AT_EXIT 0"])


def test_a_small_session_of_scenarios_is_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makefile(".loopsim.yaml", a=ONE_REPLY)
    pytester.makepyfile(test_b=AFTER.replace("range(100)", "range(10)"), conftest=CONFTEST)
    result = pytester.runpytest_subprocess("-s", "-p", "no:randomly")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(["*FROZEN_DURING 0*", "FROZEN_AT_EXIT 0"])
