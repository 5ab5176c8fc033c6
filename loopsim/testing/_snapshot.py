"""A syrupy extension that snapshots transcripts as readable text, one file each.

Roles, as in syrupy's own extensions: the serializer renders the transcript with
:func:`loopsim.render_text` (one event per line, virtual time first), the storage is one
``<test name>[<name>].transcript.txt`` file per snapshot under ``__snapshots__/<test
file>/``, and syrupy's default text comparator and reporter show a changed behaviour as a
line diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from .._transcript import Transcript, read_transcript, render_text

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import PropertyFilter, PropertyMatcher, SerializedData, SnapshotIndex

__all__ = ["TranscriptSnapshotExtension"]


class TranscriptSnapshotExtension(SingleFileSnapshotExtension):
    """Snapshot a :class:`~loopsim.Transcript` (or a transcript file) as text.

    Snapshot names are stable, never call-order numbers (which shift inside
    parametrized and generated tests): a test's single unnamed snapshot is named after
    the test (its parametrize id included); every further snapshot in the same test must
    be named, ``snapshot(name=transcript.scenario)``, or the assertion raises
    ``ValueError``.

    Example:
        >>> from loopsim.testing import TranscriptSnapshotExtension
        >>> def test_hello(snapshot):  # doctest: +SKIP
        ...     transcript = loopsim.record(agent.run, "hello")[1]
        ...     assert transcript == snapshot(extension_class=TranscriptSnapshotExtension)
    """

    _write_mode = WriteMode.TEXT
    file_extension = "transcript.txt"

    def serialize(
        self,
        data: Any,
        *,
        exclude: PropertyFilter | None = None,  # noqa: ARG002 - text has no properties to filter
        include: PropertyFilter | None = None,  # noqa: ARG002
        matcher: PropertyMatcher | None = None,  # noqa: ARG002
    ) -> SerializedData:
        """The text rendering of ``data``: a Transcript, a transcript file path, or text."""
        if isinstance(data, Transcript):
            return render_text(data)
        if isinstance(data, (os.PathLike, Path)):
            return render_text(read_transcript(data))
        if isinstance(data, str):
            return data
        msg = (
            "TranscriptSnapshotExtension snapshots a loopsim.Transcript, a transcript file "
            f"path or rendered text, got {type(data).__name__}"
        )
        raise TypeError(msg)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        """``<test name>`` for the first unnamed snapshot, ``<test name>[<name>]`` otherwise."""
        if isinstance(index, int) and index > 0:
            msg = (
                f"{test_location.snapshot_name}: this test takes more than one transcript "
                "snapshot; name each one, e.g. snapshot(name=transcript.scenario), so that "
                "names do not depend on call order"
            )
            raise ValueError(msg)
        return super().get_snapshot_name(test_location=test_location, index=index)
