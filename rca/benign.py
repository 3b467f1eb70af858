"""Wordings that programs print on a normal exit and that their own authors document as harmless.

The semantic tier reads a text by meaning, and these lines mean "NCCL", "leak" and "shut down" to it: a
clean exit with them read as a hang or a host OOM kill. Each wording here states of itself that it is not
a failure (PyTorch's warning says "on normal program exit"; Python's resource tracker cleans up what it
names), so the tier's reader skips them (`rca.embedding.chunk_lines`), at fit time and at run time alike.
Nothing else skips them: a signature that reads one of these lines still does, and a real failure beside
them is still read. A wording is added here only with its program's own statement that it is harmless.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BENIGN_WORDINGS", "BenignWording", "is_benign"]


@dataclass(frozen=True)
class BenignWording:
    """A substring of a harmless line, and where its program says it is harmless."""

    text: str
    why: str


BENIGN_WORDINGS: tuple[BenignWording, ...] = (
    BenignWording(
        "process group has NOT been destroyed before we destruct ProcessGroupNCCL",
        "PyTorch >= 2.4 prints it at every exit without destroy_process_group(); the warning itself says "
        "'On normal program exit' and 'this warning has only recently been added'",
    ),
    BenignWording(
        "destroy_process_group() was not called before program exit",
        "PyTorch's reminder at exit (docs: distributed.html#shutdown), printed by runs that finished",
    ),
    BenignWording(
        "resource_tracker: There appear to be",
        "Python's multiprocessing resource tracker cleaning up leaked semaphores or shared memory at "
        "shutdown; it names objects it cleans, not a failure (the source line printed under it holds the "
        "same words)",
    ),
)

_TEXTS = tuple(w.text for w in BENIGN_WORDINGS)


def is_benign(line: str) -> bool:
    """Whether the line carries one of the harmless wordings."""
    return any(text in line for text in _TEXTS)
