"""Testing helpers for loopsim users: the syrupy transcript snapshot extension.

Example:
    def test_checkout(snapshot):
        transcript = run_my_loop()
        assert transcript == snapshot(
            name="checkout", extension_class=TranscriptSnapshotExtension
        )
"""

from ._snapshot import TranscriptSnapshotExtension

__all__ = ["TranscriptSnapshotExtension"]
