"""The size of the real-text corpus's tune split (tests/rca/real_corpus/tune), in one place.

The integrity check counts it from the case files, the score pins count it through the engine; both read
these figures, so a round that adds, drops or promotes cases edits one file (beside the pins it measures).
"""

from __future__ import annotations

__all__ = ["TUNE_CASES", "TUNE_HEALTHY", "TUNE_INCIDENTS"]

# Fifty-first session: heldout47 promoted (30 incidents, 10 healthy).
TUNE_INCIDENTS = 3631
TUNE_HEALTHY = 1119
TUNE_CASES = TUNE_INCIDENTS + TUNE_HEALTHY
