"""Scenario files, processed as a one-way pipeline.

schema (``_schema``) → load (``_limits``, ``_source``, ``_yaml``, ``_json``, ``_validation``,
``_imports``, ``_model``, ``_references``, ``_engines``, ``_vary_paths``, ``_loader``) → build
(``_policies``, ``_build`` for loopsim's engine, ``_build_af`` for agent_framework's) →
run (``_run``) → check (``_check``, ``_compare`` for ``--engine both``) → result
(``_result``); ``vary:`` property runs (``_vary``) drive the whole pipeline once per draw.
No stage imports a later one, deferred imports included (``tests/test_scenario_layers.py``
keeps it so).
"""

from ._build import ModelOverride, ScriptedFailure
from ._check import Failure
from ._limits import DEFAULT_LIMITS, ScenarioLimits
from ._loader import load_scenario, load_scenario_text
from ._result import EngineChoice, ScenarioResult, run_scenario
from ._schema import BACKENDS, ENGINES, SCHEMA_VERSION, Backend, Engine, Scenario
from ._source import LoadedScenario
from ._tool_errors import ToolErrorInfo
from ._vary import DEFAULT_REPRODUCERS, VaryRun, run_vary, write_reproducer

__all__ = [
    "BACKENDS",
    "DEFAULT_LIMITS",
    "DEFAULT_REPRODUCERS",
    "ENGINES",
    "SCHEMA_VERSION",
    "Backend",
    "Engine",
    "EngineChoice",
    "Failure",
    "LoadedScenario",
    "ModelOverride",
    "Scenario",
    "ScenarioLimits",
    "ScenarioResult",
    "ScriptedFailure",
    "ToolErrorInfo",
    "VaryRun",
    "load_scenario",
    "load_scenario_text",
    "run_scenario",
    "run_vary",
    "write_reproducer",
]
