"""Folders of the repository that tests read (importable from any test folder, unlike a conftest)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ARTIFACTS", "EXPERIMENTS", "REPO_ROOT"]

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = REPO_ROOT / "chaos" / "experiments"
ARTIFACTS = REPO_ROOT / "build" / "test-artifacts"
"""Kept after a run: screenshots, logs of stacks (CI can upload the folder)."""
