"""The JSON Schema of scenario files, for editors (yaml-language-server) and ``loopsim schema``.

pydantic generates the expanded shapes; the short forms the loader accepts (``- restart``,
``policy: echo``, ``- completion_marker: DONE``, ``- my.module:MyEvaluator: {...}``) are
added here so editors do not flag valid files.
"""

from __future__ import annotations

import json
from typing import Any

from ._schema import BUILTIN_EVALUATORS, BUILTIN_POLICIES, Scenario
from ._schema._trajectory import MATCHER_MARK, MATCHER_SCHEMA

__all__ = ["SCHEMA_FILE_NAME", "render_json_schema", "scenario_json_schema"]

SCHEMA_FILE_NAME = "loopsim.schema.json"
IMPORT_PATH_PATTERN = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"


def _drop_kind(schema: Any) -> None:
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            props.pop("kind", None)
        for value in schema.values():
            _drop_kind(value)
    elif isinstance(schema, list):
        for value in schema:
            _drop_kind(value)


def _matcher_refs(schema: Any) -> Any:
    """Each trajectory value's schema as one reference to ``$defs.Matcher``."""
    if isinstance(schema, dict):
        if schema.pop(MATCHER_MARK, None):
            schema["$ref"] = "#/$defs/Matcher"
        for value in schema.values():
            _matcher_refs(value)
    elif isinstance(schema, list):
        for value in schema:
            _matcher_refs(value)
    return schema


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a version-1 scenario file."""
    schema = Scenario.model_json_schema(mode="validation")
    _drop_kind(schema)
    _matcher_refs(schema)
    defs: dict[str, Any] = schema["$defs"]
    defs["Matcher"] = MATCHER_SCHEMA
    for name in ("TurnSpec",):
        defs[name] = {"anyOf": [{"type": "string", "description": "a reply"}, defs[name]]}
    policy = defs["PolicySpec"]
    policy.update(minProperties=1, maxProperties=1)
    defs["PolicySpec"] = {"anyOf": [{"enum": list(BUILTIN_POLICIES)}, policy]}
    evaluator = defs["EvaluatorSpec"]
    props = evaluator["properties"]
    props.pop("custom", None)
    props["completion_marker"] = {
        "anyOf": [{"type": "string", "description": "the marker"}, props["completion_marker"]]
    }
    evaluator.update(
        minProperties=1,
        maxProperties=1,
        patternProperties={IMPORT_PATH_PATTERN: {"type": ["object", "null"]}},
    )
    defs["EvaluatorSpec"] = {
        "anyOf": [
            {"enum": list(BUILTIN_EVALUATORS)},
            {"type": "string", "pattern": IMPORT_PATH_PATTERN},
            evaluator,
        ]
    }
    defs.pop("CustomEvaluatorSpec", None)
    steps = schema["properties"]["steps"]
    steps["items"] = {"anyOf": [{"enum": ["restart", "release_session"]}, steps["items"]]}
    response = defs["ResponseExpect"]["properties"]
    for key in ("contains", "not_contains"):
        response[key] = {"anyOf": [{"type": "string"}, response[key]]}
    schema["properties"]["version"] = {"const": 1, "description": "the scenario format version"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://loopsim.dev/schema/scenario-v1.json",
        **schema,
    }


def render_json_schema() -> str:
    """The schema as the text ``loopsim schema`` prints and the shipped file holds."""
    return json.dumps(scenario_json_schema(), indent=2, sort_keys=True) + "\n"
