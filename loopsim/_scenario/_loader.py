"""Stage 2 of the scenario pipeline: load scenario files (YAML or JSON) with file:line errors.

Every problem becomes one :class:`~loopsim.ScenarioError` naming the file, the line, the
dotted field path and what was expected. Parsing keeps lines (``_yaml``), pydantic
validates (``_schema``, errors mapped by ``_validation``), then cross references
(``_references``) and ``vary:`` paths (``_vary_paths``) are checked.
"""

from __future__ import annotations

import stat
from pathlib import Path

from pydantic import ValidationError

from .._errors import ScenarioError
from ._engines import check_engine
from ._imports import user_folders
from ._json import parse_json
from ._limits import DEFAULT_LIMITS, ScenarioLimits
from ._references import check_references
from ._schema import SCHEMA_VERSION, Scenario, describe
from ._source import LoadedScenario, Located
from ._validation import from_validation
from ._vary_paths import check_vary
from ._yaml import parse_yaml

__all__ = ["load_scenario", "load_scenario_text"]


def load_scenario_text(
    text: str,
    *,
    path: str | Path | None = None,
    fmt: str = "yaml",
    limits: ScenarioLimits | None = None,
    rootdir: str | Path | None = None,
) -> LoadedScenario:
    """Validate a scenario given as text (``fmt``: ``yaml`` or ``json``).

    ``limits`` bounds what is read and explored (``ScenarioLimits``; the defaults when None).
    ``rootdir``: where its ``module:Class`` evaluators are imported from, besides the
    file's folder (default: found as pytest finds it; see ``_imports``).
    """
    where_path = None if path is None else Path(path)
    bounds = DEFAULT_LIMITS if limits is None else limits
    data, lines = (parse_json if fmt == "json" else parse_yaml)(text, where_path, bounds)
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
    if type(version) is int and version > SCHEMA_VERSION:
        raise where.error(
            ("version",),
            f"version {version} is newer than this loopsim understands (it reads version "
            f"{SCHEMA_VERSION}); upgrade loopsim",
            expected=f"version: {SCHEMA_VERSION}",
        )
    if type(version) is not int or version != SCHEMA_VERSION:  # 1.0 and true are not 1
        raise where.error(
            ("version",),
            f"unsupported version {describe(version)}",
            expected=f"version: {SCHEMA_VERSION}",
        )
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, where, data, bounds) from None
    folders = user_folders(where_path, rootdir)
    check_references(scenario, where, bounds, folders)
    check_engine(scenario, where, scenario.engine)
    if scenario.vary:
        check_vary(scenario, where, data, bounds)
    return LoadedScenario(scenario, where, text, data, folders)


def load_scenario(
    path: str | Path,
    *,
    limits: ScenarioLimits | None = None,
    rootdir: str | Path | None = None,
) -> LoadedScenario:
    """Load and validate one scenario file (``.yaml``/``.yml`` or ``.json``).

    ``limits`` bounds what is read and explored (``ScenarioLimits``; the defaults when None);
    ``rootdir`` as for :func:`load_scenario_text`.
    """
    file = Path(path)
    bounds = DEFAULT_LIMITS if limits is None else limits
    try:
        info = file.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device could block the read forever
            raise ScenarioError("not a regular file", path=file, line=1, expected="a file")
        size = info.st_size
        if size > bounds.max_bytes:  # refused before reading it into memory
            raise ScenarioError(
                f"the file has {size:,} bytes, more than the {bounds.max_bytes:,} a scenario "
                "may have",
                path=file,
                line=1,
                expected="a smaller file (ScenarioLimits.max_bytes sets the bound)",
            )
        raw = file.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"cannot read the file: {exc.strerror or exc}", path=file) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"the file is not UTF-8 text: {exc.reason} (byte {exc.start + 1})",
            path=file,
            line=raw.count(b"\n", 0, exc.start) + 1,
            expected="a file saved as UTF-8",
        ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as read_text
    fmt = "json" if file.suffix.lower() == ".json" else "yaml"
    return load_scenario_text(text, path=file, fmt=fmt, limits=limits, rootdir=rootdir)
