"""Stage 2 of the scenario pipeline: load scenario files (YAML or JSON) with file:line errors.

Every problem becomes one :class:`~loopsim.ScenarioError` naming the file, the line, the
dotted field path and what was expected. Parsing keeps lines (``_yaml``), pydantic
validates (``_schema``, errors mapped by ``_validation``), then cross references
(``_references``) and ``vary:`` paths (``_vary_paths``) are checked.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from .._errors import ScenarioError
from ._engines import check_engine
from ._imports import user_folders
from ._references import check_references
from ._schema import SCHEMA_VERSION, Scenario, describe
from ._source import LoadedScenario, Located
from ._validation import from_validation
from ._vary_paths import check_vary
from ._yaml import parse_json, parse_yaml

__all__ = ["load_scenario", "load_scenario_text"]


def load_scenario_text(
    text: str,
    *,
    path: str | Path | None = None,
    fmt: str = "yaml",
    rootdir: str | Path | None = None,
) -> LoadedScenario:
    """Validate a scenario given as text (``fmt``: ``yaml`` or ``json``).

    ``rootdir``: where its ``module:Class`` evaluators are imported from, besides the
    file's folder (default: found as pytest finds it; see ``_imports``).
    """
    where_path = None if path is None else Path(path)
    data, lines = (parse_json if fmt == "json" else parse_yaml)(text, where_path)
    where = Located(where_path, lines)
    if not isinstance(data, dict):
        raise ScenarioError(
            f"expected a mapping at the top level, got {describe(data)}",
            path=where_path,
            line=lines.get((), 1),
            expected="a scenario mapping starting with `version: 1`",
        )
    if "version" not in data:
        raise ScenarioError(
            'missing required key "version"',
            path=where_path,
            line=1,
            location="version",
            expected=f"version: {SCHEMA_VERSION} as the first key",
        )
    version = data["version"]
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise where.error(
            ("version",),
            f"version {version} is newer than this loopsim understands (it reads version "
            f"{SCHEMA_VERSION}); upgrade loopsim",
            expected=f"version: {SCHEMA_VERSION}",
        )
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise where.error(
            ("version",),
            f"unsupported version {describe(version)}",
            expected=f"version: {SCHEMA_VERSION}",
        )
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, where, data) from None
    folders = user_folders(where_path, rootdir)
    check_references(scenario, where, folders)
    check_engine(scenario, where, scenario.engine)
    if scenario.vary:
        check_vary(scenario, where, data)
    return LoadedScenario(scenario, where, text, data, folders)


def load_scenario(path: str | Path, *, rootdir: str | Path | None = None) -> LoadedScenario:
    """Load and validate one scenario file (``.yaml``/``.yml`` or ``.json``)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read the file: {exc.strerror or exc}", path=file) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"the file is not UTF-8 text: {exc.reason}", path=file) from None
    fmt = "json" if file.suffix.lower() == ".json" else "yaml"
    return load_scenario_text(text, path=file, fmt=fmt, rootdir=rootdir)
