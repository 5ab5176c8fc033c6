"""The exit code is the verdict, whatever user code does to the process (issue 26, item 1).

Each case is a scenario (or an evaluator for ``check-evaluator``) whose user module
misbehaves: ``os._exit(0)``, an ``atexit`` handler that exits 0, a kill, ``sys.exit`` in
a thread, a thread left running. Before, each of them made CI green (exit 0 after
"1 failed", or no verdict at all) or hung the command after its summary. The commands
run in a fresh process, as from a shell, bounded in time (tests/_cli.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _cli import loopsim_cli

STOP = """\
import loopsim


class Stop(loopsim.LoopEvaluator):
    async def evaluate(self, context):
        return loopsim.LoopEvaluation.stop()
"""

SCENARIO = """\
version: 1
agents:
  writer: {{script: [final DONE]}}
parent: {{agent: writer}}
loop:
  evaluators:
    - {target}
steps:
  - run: write
expect: {{iterations: {iterations}}}
{extra}
"""

#: Real seconds a command here may take before the test fails (instead of hanging).
BOUND = 60


def project(
    tmp_path: Path,
    source: str,
    *,
    passing: bool = True,
    target: str = "usermod:Stop",
    extra: str = "",
) -> Path:
    """project/ with pytest.ini, scenarios/usermod.py and scenarios/s.loopsim.yaml."""
    root = tmp_path / "project"
    scenarios = root / "scenarios"
    scenarios.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (scenarios / "usermod.py").write_text(source, encoding="utf-8")
    scenario = scenarios / "s.loopsim.yaml"
    text = SCENARIO.format(target=target, iterations=1 if passing else 5, extra=extra)
    scenario.write_text(text, encoding="utf-8")
    return scenario


def run(
    scenario: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return loopsim_cli(
        "run",
        str(scenario),
        "-p",
        "no:cacheprovider",
        *extra,
        cwd=scenario.parent.parent,
        env=env,
        timeout=BOUND,
    )


def test_the_scenario_module_passes_as_a_control(tmp_path: Path) -> None:
    done = run(project(tmp_path, STOP))
    assert done.returncode == 0, done.stdout + done.stderr
    failed = run(project(tmp_path / "b", STOP, passing=False))
    assert failed.returncode == 1


def test_an_atexit_handler_that_exits_0_does_not_hide_a_failed_scenario(tmp_path: Path) -> None:
    source = "import atexit, os\natexit.register(lambda: os._exit(0))\n" + STOP

    done = run(project(tmp_path, source, passing=False))

    assert "1 failed" in done.stdout
    assert done.returncode == 1


def test_os_exit_in_an_evaluator_fails_run_naming_module_and_scenario(tmp_path: Path) -> None:
    source = STOP.replace("return loopsim.LoopEvaluation.stop()", "import os; os._exit(0)")

    done = run(project(tmp_path, source))

    assert done.returncode == 1
    assert "os._exit(0)" in done.stderr
    assert "usermod" in done.stderr
    assert "s.loopsim.yaml" in done.stderr


def test_os_exit_in_an_evaluator_fails_check_evaluator(tmp_path: Path) -> None:
    source = STOP.replace("return loopsim.LoopEvaluation.stop()", "import os; os._exit(0)")
    scenario = project(tmp_path, source)

    done = loopsim_cli(
        "check-evaluator", "usermod:Stop", "--max-examples", "2", cwd=scenario.parent, timeout=BOUND
    )

    assert done.returncode == 1
    assert "os._exit(0)" in done.stderr
    assert "usermod" in done.stderr


def test_os_exit_at_import_fails_check_evaluator(tmp_path: Path) -> None:
    scenario = project(tmp_path, "import os\nos._exit(0)\n")

    done = loopsim_cli("check-evaluator", "usermod:Stop", cwd=scenario.parent, timeout=BOUND)

    assert done.returncode == 1
    assert "usermod" in done.stderr


def test_a_killed_interpreter_is_reported_with_its_scenario_and_module(tmp_path: Path) -> None:
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    source = STOP.replace("return loopsim.LoopEvaluation.stop()", kill)

    done = run(project(tmp_path, source))

    assert done.returncode == 1
    assert "killed by signal SIGKILL" in done.stderr
    assert "s.loopsim.yaml (module usermod)" in done.stderr


def test_sys_exit_in_a_thread_fails_the_run(tmp_path: Path) -> None:
    source = "import sys, threading\n" + STOP.replace(
        "        return loopsim.LoopEvaluation.stop()",
        "        worker = threading.Thread(target=sys.exit, args=(0,), name='quitter')\n"
        "        worker.start(); worker.join()\n"
        "        return loopsim.LoopEvaluation.stop()",
    )

    done = run(project(tmp_path, source))

    assert done.returncode == 1
    assert "thread 'quitter' called sys.exit(0)" in done.stdout


THREAD_AT_IMPORT = (
    "import threading, time\n"
    "threading.Thread(target=time.sleep, args=(3600,), name='forever').start()\n" + STOP
)


def test_a_thread_left_running_fails_run_and_is_not_waited_for(tmp_path: Path) -> None:
    done = run(project(tmp_path, THREAD_AT_IMPORT))  # would hang for an hour: BOUND

    assert done.returncode == 1
    assert "1 passed" in done.stdout
    assert "thread 'forever' is still running (module usermod" in done.stdout


def test_a_thread_left_running_fails_validate_and_is_not_waited_for(tmp_path: Path) -> None:
    scenario = project(tmp_path, THREAD_AT_IMPORT)

    done = loopsim_cli("validate", str(scenario), timeout=BOUND)

    assert done.returncode == 1
    assert "thread 'forever' is still running (module usermod" in done.stderr


def test_an_import_that_blocks_is_stopped_at_its_bound(tmp_path: Path) -> None:
    scenario = project(tmp_path, "import time\ntime.sleep(3600)\n")

    done = loopsim_cli(
        "validate", str(scenario), env={"LOOPSIM_IMPORT_TIMEOUT": "1"}, timeout=BOUND
    )

    assert done.returncode == 1
    assert "importing module usermod for scenario" in done.stderr
    assert "LOOPSIM_IMPORT_TIMEOUT" in done.stderr


def test_a_constructor_that_blocks_is_stopped_at_its_bound(tmp_path: Path) -> None:
    source = STOP + "\n    def __init__(self):\n        import time; time.sleep(3600)\n"

    done = run(project(tmp_path, source), env={"LOOPSIM_FACTORY_TIMEOUT": "1"})

    assert done.returncode == 1
    assert "calling the factory of module usermod:Stop" in done.stderr
    assert "LOOPSIM_FACTORY_TIMEOUT" in done.stderr


def test_an_evaluator_that_never_yields_is_stopped_past_the_real_time_limit(
    tmp_path: Path,
) -> None:
    source = STOP.replace("return loopsim.LoopEvaluation.stop()", "while True: pass")

    done = run(project(tmp_path, source, extra="limits: {real_time: 1}"))

    # the watchdog interrupts the busy loop between bytecodes (the run's own verdict,
    # naming where it spun), before the supervisor's bound would have to stop the phase
    assert done.returncode == 1
    assert "RealTimeLimitError" in done.stdout
    assert "at usermod.py:6 in Stop.evaluate" in done.stdout
    assert "1 failed" in done.stdout


def test_a_bad_bound_setting_is_a_usage_error(tmp_path: Path) -> None:
    done = run(project(tmp_path, STOP), env={"LOOPSIM_IMPORT_TIMEOUT": "soon"})

    assert done.returncode == 2
    assert "LOOPSIM_IMPORT_TIMEOUT='soon'" in done.stderr


@pytest.mark.parametrize(
    "source",
    [
        STOP.replace("return loopsim.LoopEvaluation.stop()", "import os; os._exit(0)"),
        "import atexit, os\natexit.register(lambda: os._exit(0))\n" + STOP,
    ],
    ids=["os-exit", "atexit"],
)
def test_without_the_supervisor_the_exit_guard_keeps_the_verdict(
    tmp_path: Path, source: str
) -> None:
    scenario = project(tmp_path, source, passing=False)

    done = run(scenario, env={"LOOPSIM_SUPERVISE": "0"})

    assert done.returncode == 1
    assert "os._exit(0)" in done.stderr


@pytest.mark.parametrize(
    "source",
    [
        STOP.replace("return loopsim.LoopEvaluation.stop()", "import os; os._exit(0)"),
        "import atexit, os\natexit.register(lambda: os._exit(0))\n" + STOP,
    ],
    ids=["os-exit", "atexit"],
)
def test_plain_pytest_with_the_plugin_keeps_the_verdict(tmp_path: Path, source: str) -> None:
    scenario = project(tmp_path, source, passing=False)

    done = subprocess.run(  # noqa: S603 - our own interpreter and arguments
        [sys.executable, "-m", "pytest", str(scenario), "-q", "-p", "no:cacheprovider"],
        cwd=scenario.parent.parent,
        env={**os.environ},
        capture_output=True,
        text=True,
        check=False,
        timeout=BOUND,
    )

    assert done.returncode == 1
    assert "user code called os._exit(0)" in done.stderr
