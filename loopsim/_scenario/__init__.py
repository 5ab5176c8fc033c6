"""Scenario files: schema, loader (file:line errors), builder, runner and expectations."""

from ._loader import LoadedScenario, load_scenario, load_scenario_text
from ._schema import SCHEMA_VERSION, Scenario

__all__ = [
    "SCHEMA_VERSION",
    "LoadedScenario",
    "Scenario",
    "load_scenario",
    "load_scenario_text",
]
