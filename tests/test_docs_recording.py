"""docs/recording.md: its Python blocks run in order (record, then replay), against the
local OpenAI-compatible server, and the file they write holds no API key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("agent_framework_openai", reason="agent-framework-openai is not installed")

from openai_fake import running

PAGE = Path(__file__).resolve().parent.parent / "docs" / "recording.md"
KEY = "sk-docs-example-0123456789abcdefghij"


def test_recording_page_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 3  # record, replay, the model-call seam end to end
    monkeypatch.chdir(tmp_path)
    with running() as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        scope: dict[str, object] = {"__name__": "docs"}
        exec(compile(blocks[0], "docs/recording.md", "exec"), scope)  # noqa: S102 - our docs
        assert scope["answer"] == "2 + 3 = 5"
        assert len(server.requests) == 2
    written = (tmp_path / "calc.transcript.json").read_bytes()
    assert KEY.encode() not in written
    exec(compile(blocks[1], "docs/recording.md", "exec"), {"__name__": "docs"})  # noqa: S102


def test_the_model_seam_example_records_replays_and_catches_a_changed_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    monkeypatch.chdir(tmp_path)
    with running() as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        scope: dict[str, object] = {"__name__": "docs"}
        exec(compile(blocks[2], "docs/recording.md", "exec"), scope)  # noqa: S102 - our docs
        assert len(server.requests) == 2  # recorded once; the replays sent nothing
    cassette = tmp_path / "cassettes" / "calc.transcript.json"
    assert KEY.encode() not in cassette.read_bytes()


def test_recording_page_names_the_client_versions_it_was_tested_with() -> None:
    """The page, the dev extra's pins and what this run imports name the same versions, so
    a new client release changes none of them until someone bumps all three."""
    from importlib.metadata import version

    import tomllib

    text = PAGE.read_text(encoding="utf-8")
    project = tomllib.loads((PAGE.parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    pins = dict(
        requirement.split("==", 1)
        for requirement in project["project"]["optional-dependencies"]["dev"]
        if "==" in requirement
    )
    for name in ("agent-framework-core", "agent-framework-openai", "openai"):
        assert f"{name} {pins[name]}" in text, (
            f"docs/recording.md does not name {name} {pins[name]}"
        )
        assert version(name) == pins[name], (
            f"{name} {version(name)} is installed, not the pinned {pins[name]}: reinstall '.[dev]'"
        )
