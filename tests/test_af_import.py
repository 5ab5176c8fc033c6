"""The extra is optional: loopsim never imports agent_framework; the adapter module names the fix."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and our own code
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_import_loopsim_does_not_import_agent_framework() -> None:
    done = run(
        """
        import sys
        import loopsim, loopsim.testing, loopsim.cli, loopsim.pytest_plugin
        print(sorted(m for m in sys.modules if m.startswith("agent_framework")))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_package_the_adapter_names_the_install_command() -> None:
    done = run(
        """
        import sys
        sys.modules["agent_framework"] = None  # as if the extra were not installed
        import loopsim
        try:
            import loopsim.agent_framework
        except ImportError as exc:
            print(type(exc).__name__, exc.name, str(exc))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ImportError agent_framework ")
    assert "pip install 'pytest-loopsim[agent-framework]'" in done.stdout


def test_with_the_package_the_adapter_imports() -> None:
    done = run("import loopsim.agent_framework as m; print(m.as_chat_client.__name__)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "as_chat_client"
