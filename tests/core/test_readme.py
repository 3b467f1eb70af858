"""README.md runs as written: every `gpuobs ...` command names verbs and flags that exist (checked against the
real `--help`), every bench script it names starts with the venv's python from the repo root, and every
path it points to lies inside the repo."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
VENV_BIN = Path(sys.executable).parent
GPUOBS = str(VENV_BIN / "gpuobs")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def readme_snippets() -> list[str]:
    """Indented code lines and inline `code` spans of the README, comments cut off."""
    text = README.read_text(encoding="utf-8")
    snippets = [line.strip() for line in text.splitlines() if line.startswith("    ")]
    snippets += re.findall(r"`([^`\n]+)`", text)
    return [s.split("   #")[0].split(" # ")[0].strip() for s in snippets]


def readme_commands() -> list[list[str]]:
    """Each shell command of the README that starts a program of this repo, as argv."""
    commands = []
    for snippet in readme_snippets():
        for part in re.split(r"[;|]|&&", snippet):
            try:
                argv = shlex.split(part)
            except ValueError:
                continue
            if argv and argv[0] in ("gpuobs", ".venv/bin/gpuobs", ".venv/bin/python", "python", "python3"):
                commands.append(argv)
    return commands


@functools.cache
def help_text(*words: str) -> str:
    """`gpuobs WORDS --help`, run for real; asserts it succeeds."""
    done = subprocess.run([GPUOBS, *words, "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "250", "TERM": "dumb"})
    assert done.returncode == 0, f"gpuobs {' '.join(words)} --help: {done.stderr}"
    return done.stdout


def test_the_readme_first_lines_are_the_two_setup_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()[:8]
    head = [line.strip() for line in lines if line.startswith("    ")]
    assert [line.split("#")[0].strip() for line in head] == ["make demo", "make test"]


def test_the_readme_says_where_gpuobs_is_after_make_demo() -> None:
    """`make demo` installs into .venv, which is not on PATH: the README says so before any command."""
    text = README.read_text(encoding="utf-8")
    first_command = text.index("    gpuobs ")
    assert "source .venv/bin/activate" in text[:first_command]
    assert ".venv/bin/gpuobs" in text[:first_command]
    assert (VENV_BIN / "gpuobs").is_file()


def test_every_readme_gpuobs_command_names_verbs_and_flags_that_exist() -> None:
    commands = [argv for argv in readme_commands() if argv[0].endswith("gpuobs") and len(argv) > 1]
    assert len(commands) > 15, commands
    verbs = set()
    for argv in commands:
        words = [w for w in argv[1:3] if re.fullmatch(r"[a-z][a-z-]*", w)]
        # A sub-command (`dashboards build`) when `gpuobs VERB WORD --help` succeeds as a group's child.
        path = words[:1]
        if len(words) == 2 and "Commands" in help_text(words[0]):
            path = words
        assert path, f"README command without a verb: {argv}"
        verbs.add(path[0])
        known = set(_FLAG.findall(help_text(*path)))
        named = {a.split("=")[0] for a in argv if a.startswith("--")}
        assert named <= known, f"README: `{shlex.join(argv)}` names flags {sorted(named - known)} " \
                               f"that `gpuobs {' '.join(path)} --help` does not list"
    assert {"export", "diagnose", "serve", "dashboards", "loadtest", "demo"} <= verbs


def test_readme_python_commands_use_the_venv_and_start() -> None:
    """`python bench/rca.py` with a bare python ended in ModuleNotFoundError: the README says
    `.venv/bin/python`, and each script it names answers `--help` run from the repo root exactly so."""
    commands = [argv for argv in readme_commands() if "python" in argv[0]]
    assert commands and all(argv[0] == ".venv/bin/python" for argv in commands), commands
    for argv in commands:
        target = argv[1:3] if argv[1] == "-m" else argv[1:2]
        done = subprocess.run([sys.executable, *target, "--help"], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": ""})
        assert done.returncode == 0, f"{shlex.join(argv)} --help: {done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr and "usage" in done.stdout.lower(), done.stdout


def test_readme_paths_stay_inside_the_repo() -> None:
    text = README.read_text(encoding="utf-8")
    assert "../" not in text, "README points outside the repo"
    links = re.findall(r"\]\(([^)#]+)\)", text)
    paths = [s for s in re.findall(r"`([^`\s]+)`", text)
             if re.fullmatch(r"(docs|bench|deploy|tests|chaos|rca|serving|kernels|dashboards)/[\w./*-]*", s)]
    assert len(paths) > 5, paths
    for path in [*links, *paths]:
        if "*" in path:
            assert list(ROOT.glob(path)), f"README: {path} matches nothing"
        elif not path.startswith(("http://", "https://")):
            assert (ROOT / path).exists(), f"README: {path} does not exist in the repo"
