"""``model: module:function`` agents: the shipped example, its cassette, and bad models.

The shipped ``scenarios/recorded_model.loopsim.yaml`` replays its committed cassette with
the model never called (agent_framework absent, too); recording it again against the
fake OpenAI server of the real-client tests gives the committed file byte for byte, with
the API key nowhere in it. A model function that raises, returns something that is not
a chat client, or returns an agent_framework client without the extra, is a located
error naming ``agents.<name>.model``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import loopsim
from loopsim._scenario import load_scenario, load_scenario_text, run_scenario
from loopsim._transcript._cassette import Cassette

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "scenarios" / "recorded_model.loopsim.yaml"
COMMITTED = ROOT / "scenarios" / "cassettes" / "recorded_model.transcript.json"
KEY = "sk-loopsim-example-0123456789abcdefghij"


def _refuse(*_: Any, **__: Any) -> Any:
    msg = "network used during replay"
    raise AssertionError(msg)


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework"])
def test_the_example_replays_its_cassette_and_never_calls_the_model(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if engine == "agent_framework":
        pytest.importorskip("agent_framework", reason="agent-framework-core is not installed")
    loaded = load_scenario(EXAMPLE)
    import recorded_model  # the example's module, importable once the scenario is loaded

    called: list[str] = []
    monkeypatch.setattr(recorded_model, "calc", called.append)
    monkeypatch.setattr("socket.create_connection", _refuse)
    cassette = Cassette(COMMITTED, "none")
    result = run_scenario(loaded, models=cassette.client, engine=engine)  # type: ignore[arg-type] # a str of the two engine names
    assert result.passed, result.report()
    cassette.finish()  # every recorded turn replayed
    assert called == []
    assert result.calls["calc"] == 2
    assert result.response_text == "2 + 3 = 5"


@pytest.mark.parametrize("engine", ["loopsim", "agent_framework", "both"])
def test_run_scenario_without_models_replays_the_cassette(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if engine != "loopsim":
        pytest.importorskip("agent_framework", reason="agent-framework-core is not installed")
    loaded = load_scenario(EXAMPLE)
    import recorded_model  # the example's module, importable once the scenario is loaded

    called: list[str] = []
    monkeypatch.setattr(recorded_model, "calc", called.append)
    monkeypatch.setattr("socket.create_connection", _refuse)
    result = run_scenario(loaded, engine=engine)  # type: ignore[arg-type] # engine names
    assert result.passed, result.report()
    assert called == []
    assert result.calls["calc"] == 2


def test_run_scenario_without_models_or_cassette_says_how_to_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("recorded_model.loopsim.yaml", "recorded_model.py"):
        shutil.copy(EXAMPLE.parent / name, tmp_path / name)
    loaded = load_scenario(tmp_path / EXAMPLE.name)
    import recorded_model

    called: list[str] = []
    monkeypatch.setattr(recorded_model, "calc", called.append)
    with pytest.raises(loopsim.LoopsimError, match="--loopsim-record-mode=once") as raised:
        run_scenario(loaded)
    assert str(tmp_path / "cassettes" / "recorded_model.transcript.json") in str(raised.value)
    assert called == []


def test_run_scenario_of_a_model_scenario_from_text_asks_for_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))  # the model module, as from a file
    loaded = load_scenario_text(EXAMPLE.read_text(encoding="utf-8"))
    import recorded_model

    called: list[str] = []
    monkeypatch.setattr(recorded_model, "calc", called.append)
    with pytest.raises(loopsim.ScenarioError, match="pass models="):
        run_scenario(loaded)  # no file, so no cassette: never the real model
    assert called == []


def test_run_scenario_without_models_fails_on_an_unplayed_recorded_turn(tmp_path: Path) -> None:
    for name in ("recorded_model.loopsim.yaml", "recorded_model.py"):
        shutil.copy(EXAMPLE.parent / name, tmp_path / name)
    (tmp_path / "cassettes").mkdir()
    recorded = loopsim.read_transcript(COMMITTED)
    # a third turn the scenario never asks for: the replay must not call that identical
    extra = [e for e in recorded.events if e.kind in ("model_request", "model_response")][-2:]
    events = [*recorded.events, *(e.model_copy(update={"seq": e.seq + 100}) for e in extra)]
    loopsim.write_transcript(
        tmp_path / "cassettes" / "recorded_model.transcript.json",
        recorded.model_copy(update={"events": events}),
    )
    result = run_scenario(load_scenario(tmp_path / EXAMPLE.name))
    assert not result.passed
    assert "1 recorded turn(s) of calc were never replayed" in result.report()


def test_loopsim_replay_of_the_example_never_calls_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from loopsim.cli import main  # the CLI, in process

    loaded = load_scenario(EXAMPLE)
    import recorded_model  # the example's module, importable once the scenario is loaded

    called: list[str] = []
    monkeypatch.setattr(recorded_model, "calc", called.append)
    run = run_scenario(loaded, models=Cassette(COMMITTED, "none").client)
    recording = run.write_transcript(tmp_path)
    capsys.readouterr()
    assert main(["replay", str(recording), "--scenario", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("identical: 2 model calls answered from the recording")
    assert called == []  # the replay and its model-side check leave the real model alone


def test_the_example_replays_without_agent_framework(tmp_path: Path) -> None:
    # `loopsim run scenarios/` in CI: no agent_framework, no network, no key.
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["agent_framework"] = None  # as if the extra were not installed
        from loopsim.cli import main
        code = main(["run", "-q", "-p", "no:cacheprovider", {str(EXAMPLE)!r}])
        print("exit", code)
        print(sorted(m for m in sys.modules if m.startswith("agent_framework")))
        """
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert "exit 0" in done.stdout, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert done.stdout.strip().endswith("['agent_framework']")  # only the blocked entry


def test_recording_the_example_against_the_fake_server_gives_the_committed_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("agent_framework_openai", reason="agent-framework-openai is absent")
    from openai_fake import running  # needs the vendor package

    folder = tmp_path / "scenarios"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder)
    shutil.copy(EXAMPLE.with_name("recorded_model.py"), folder)
    target = folder / "cassettes" / "recorded_model.transcript.json"
    loaded = load_scenario(folder / EXAMPLE.name)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with running() as server:
        monkeypatch.setenv("LOOPSIM_EXAMPLE_BASE_URL", server.base_url)
        cassette = Cassette(target, "all")
        clients: list[Any] = []

        def models(name: str, scenario_client: Any) -> Any:
            clients.append(cassette.client(name, scenario_client))
            return clients[-1]

        # Both engines: the real model is asked by the first, the second replays it.
        result = run_scenario(loaded, models=models, engine="both")
        assert result.passed, result.report()
        cassette.finish()
        requests = list(server.requests)
    assert [path for path, _, _ in requests] == ["/v1/chat/completions"] * 2
    sent = [{k.lower(): v for k, v in headers.items()} for _, headers, _ in requests]
    assert all(headers["authorization"] == f"Bearer {KEY}" for headers in sent)
    # The recorder found the key on the vendor's client (redacted wherever it shows).
    assert isinstance(clients[0], loopsim.RecordingChatClient)
    assert KEY in clients[0].redactor.values
    written = target.read_bytes()
    assert KEY.encode() not in written
    assert written == COMMITTED.read_bytes()


# -- bad models ---------------------------------------------------------------------------

SCENARIO = """version: 1
agents:
  bot:
    model: bad_models:FUNCTION
parent: {agent: bot}
steps:
  - run: hi
"""

MODULE = '''
class VendorLike:
    """Looks like an agent_framework chat client: get_response only."""

    async def get_response(self, messages, **kwargs):
        raise AssertionError("never reached")


def raises(name):
    raise RuntimeError(f"no key for {name}")


def not_a_client(name):
    return 42


def vendor(name):
    return VendorLike()
'''


def _scenario(tmp_path: Path, function: str) -> Path:
    (tmp_path / "bad_models.py").write_text(MODULE, encoding="utf-8")
    path = tmp_path / f"{function}.loopsim.yaml"
    path.write_text(SCENARIO.replace("FUNCTION", function), encoding="utf-8")
    sys.modules.pop("bad_models", None)
    return path


@pytest.mark.parametrize(
    ("function", "problem"),
    [
        ("raises", "bad_models:raises('bot') raised RuntimeError: no key for bot"),
        ("not_a_client", "bad_models:not_a_client('bot') returned 42, not a chat client"),
    ],
)
def test_a_bad_model_function_is_a_located_error(
    tmp_path: Path, function: str, problem: str
) -> None:
    path = _scenario(tmp_path, function)
    # Recording asks for the real client up front: a located ScenarioError.
    with pytest.raises(loopsim.ScenarioError) as info:
        run_scenario(
            load_scenario(path),
            models=Cassette(tmp_path / "c.transcript.json", "once").client,
        )
    assert info.value.location == "agents.bot.model"
    assert info.value.line == 4
    assert problem in str(info.value)
    # Handed the model itself (no cassette), the first request fails the run with it.
    result = run_scenario(load_scenario(path), models=lambda _name, model: model)
    assert not result.passed
    assert problem in result.report()
    assert not (tmp_path / "c.transcript.json").exists()


def test_an_agent_framework_client_without_the_extra_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _scenario(tmp_path, "vendor")
    monkeypatch.setitem(sys.modules, "loopsim.agent_framework", None)  # the extra is absent
    with pytest.raises(loopsim.ScenarioError) as info:
        run_scenario(
            load_scenario(path),
            models=Cassette(tmp_path / "c.transcript.json", "once").client,
        )
    assert info.value.location == "agents.bot.model"
    assert "returned an agent_framework chat client" in str(info.value)
    assert "pip install 'pytest-loopsim[agent-framework]'" in str(info.value)


def test_the_recording_page_shows_the_shipped_example() -> None:
    page = (ROOT / "docs" / "recording.md").read_text(encoding="utf-8")
    shown = re.findall(r"```yaml\n(.*?)```", page, flags=re.DOTALL)
    assert shown == [EXAMPLE.read_text(encoding="utf-8")]
    assert "cassettes/<scenario name>.transcript.json" in page
    assert "loopsim run --loopsim-record-mode=once scenarios/recorded_model.loopsim.yaml" in page


FACTORY_MODULE = """
import loopsim

MADE = []


def real(name):
    MADE.append(name)
    return loopsim.FunctionChatClient(lambda messages, options: "hi " + messages[-1].text)


def build(client, name):
    return loopsim.Agent(client, name=name, instructions="from the factory")
"""


def test_a_factory_builds_the_agent_around_the_real_model(tmp_path: Path) -> None:
    (tmp_path / "factory_models.py").write_text(FACTORY_MODULE, encoding="utf-8")
    path = tmp_path / "own.loopsim.yaml"
    path.write_text(
        "version: 1\nagents:\n  bot:\n    model: factory_models:real\n"
        "    factory: factory_models:build\nparent: {agent: bot}\nsteps:\n  - run: there\n"
        "expect:\n  response: {contains: hi there}\n",
        encoding="utf-8",
    )
    sys.modules.pop("factory_models", None)
    target = tmp_path / "cassettes" / "own.transcript.json"
    with Cassette(target, "once") as cassette:
        assert run_scenario(load_scenario(path), models=cassette.client).passed
    import factory_models  # the test's module, importable once the scenario is loaded

    assert factory_models.MADE == ["bot"]
    recorded = loopsim.read_transcript(target)
    assert [e.data.get("instructions") for e in recorded.events if e.kind == "model_request"] == [
        "from the factory"
    ]
    with Cassette(target, "none") as cassette:
        assert run_scenario(load_scenario(path), models=cassette.client).passed
    assert factory_models.MADE == ["bot"]  # the replay made no model
