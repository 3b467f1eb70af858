"""The size of the real-text corpus's tune split (tests/rca/real_corpus/tune), in one place.

The integrity check counts it from the case files, the score pins count it through the engine; both read
these figures, so a round that adds, drops or promotes cases edits one file (beside the pins it measures).
"""

from __future__ import annotations

__all__ = ["TUNE_CASES", "TUNE_HEALTHY", "TUNE_INCIDENTS"]

# Fifty-fourth session: heldout50 promoted (24 incidents, 11 healthy).
TUNE_INCIDENTS = 3709
TUNE_HEALTHY = 1152
TUNE_CASES = TUNE_INCIDENTS + TUNE_HEALTHY
