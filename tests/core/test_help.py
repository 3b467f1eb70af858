"""Every verb's --help and every error line read right in a terminal and through a pipe: rich markup
eats nothing (`[default: x]`, `gpuobs[serving]`), no typer `<str>` placeholders, floats rounded, errors
one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from gpuobs.cli.app import app

GPUOBS = str(Path(sys.executable).parent / "gpuobs")
_PLACEHOLDER = re.compile(r"<(str|bool|int|float|path|Path|list\[[^\]]*\])>")


def verb_paths() -> list[tuple[str, ...]]:
    """Every command of the app, sub-commands included, as the words that name it."""
    paths: list[tuple[str, ...]] = []

    def walk(command: object, prefix: tuple[str, ...]) -> None:
        for name, child in getattr(command, "commands", {}).items():
            paths.append((*prefix, name))
            walk(child, (*prefix, name))

    walk(typer.main.get_command(app), ())
    return paths


def bracketed_help(path: tuple[str, ...]) -> list[str]:
    """The `[...]` pieces the source puts in this command's help texts (what rich markup would eat)."""
    command: Any = typer.main.get_command(app)
    for word in path:
        command = command.commands[word]
    texts = [command.help or ""]
    texts += [getattr(p, "help", None) or "" for p in command.params]
    return [piece for text in texts for piece in re.findall(r"\[[a-z][^\]\[]*\]", text.replace("\\[", "["))]


def run_gpuobs(*args: str, columns: str | None = "250") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TERM": "dumb", "GPUOBS_CONFIG": os.devnull}
    env.pop("COLUMNS", None)
    if columns:
        env["COLUMNS"] = columns
    return subprocess.run([GPUOBS, *args], capture_output=True, text=True, timeout=60, env=env)


def test_the_app_lists_its_verbs() -> None:
    verbs = {path[0] for path in verb_paths()}
    assert {"export", "diagnose", "serve", "demo", "dashboards", "loadtest", "gameday", "bundle"} <= verbs


@pytest.mark.parametrize("path", verb_paths(), ids=" ".join)
def test_help_says_what_each_option_takes(path: tuple[str, ...]) -> None:
    done = run_gpuobs(*path, "--help")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert not _PLACEHOLDER.search(out), f"gpuobs {' '.join(path)} --help shows {_PLACEHOLDER.findall(out)}"
    # An eaten `[default: x]` left "targets ." behind.
    assert not re.search(r"[a-z] \.(\s|$)", out), re.findall(r".{30}[a-z] \.(?:\s|$)", out)
    for piece in bracketed_help(path):
        assert piece in out, f"gpuobs {' '.join(path)} --help lost {piece!r} to rich markup"
    assert not re.search(r"\d\.\d{5,}", out), "an unrounded float default"


def test_serve_help_names_its_extra_and_floats_are_rounded() -> None:
    assert "pip install 'gpuobs[serving]'" in run_gpuobs("serve", "--help").stdout
    loadtest = run_gpuobs("loadtest", "--help").stdout
    assert "[default: 1.778]" in loadtest and "1.7782794" not in loadtest


def test_errors_are_one_unwrapped_line_through_a_pipe() -> None:
    """stderr is a pipe here and COLUMNS is unset: rich must not wrap the error at 80 columns, nor read the
    brackets of a path as markup."""
    missing = "/nonexistent/" + "a-rather-long-folder-name/" * 4 + "gpuobs[serving]/kern.log"
    done = run_gpuobs("diagnose", "--logs", missing, columns=None)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and missing in lines[0] and len(lines[0]) > 80, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("verb", ["gameday", "demo"])
@pytest.mark.parametrize("beneath", [False, True], ids=["a file", "beneath a file"])
def test_an_unusable_out_folder_is_an_input_error(verb: str, beneath: bool, tmp_path: Path) -> None:
    """`--out` naming a file (or a path under one) is said in one line before any stack starts, and the file
    is left as it was; it used to escape as a FileExistsError / NotADirectoryError traceback."""
    kept = tmp_path / "notes.txt"
    kept.write_text("the user's own file\n")
    out = kept / "reports" if beneath else kept
    done = run_gpuobs(verb, "--out", str(out))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr and f"--out {out}:" in done.stderr
    assert kept.read_text() == "the user's own file\n"


BAD_EXPERIMENTS = {
    "not JSON": "{bad",
    "a JSON list": "[1, 2]",
    "no description": '{"title": 5}',
}


@pytest.mark.parametrize("mode", [["--dry-run"], ["--list"], ["--no-prometheus"]], ids=" ".join)
@pytest.mark.parametrize("text", list(BAD_EXPERIMENTS.values()), ids=list(BAD_EXPERIMENTS))
def test_a_bad_experiment_file_is_an_input_error_before_any_stack(
    mode: list[str], text: str, tmp_path: Path
) -> None:
    """A game-day experiment that is not JSON, not an object or not valid is named in one error line, and in
    a real run before the local stack starts (it used to escape as a JSONDecodeError traceback)."""
    experiment = tmp_path / "mine.json"
    experiment.write_text(text)
    out = tmp_path / "out"
    done = run_gpuobs("gameday", str(experiment), *mode, "--out", str(out))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr and f"{experiment}:" in done.stderr
    assert not (out / "stack").exists()


STACK_TARGETS = {
    "a URL with no scheme": (["--serving-url", "127.0.0.1:8000"], "--serving-url: not an http(s) URL"),
    "an ftp exporter": (
        ["--serving-url", "http://127.0.0.1:8000", "--exporter-url", "ftp://127.0.0.1"],
        "--exporter-url: not an http(s) URL",
    ),
    "a host off the allowlist": (
        ["--serving-url", "http://10.1.2.3:8000"],
        "--serving-url: target 10.1.2.3 is not on the allowlist",
    ),
    "a gRPC target with no port": (
        ["--serving-url", "http://127.0.0.1:8000", "--grpc-target", "localhost"],
        "--grpc-target: not a gRPC host:port target",
    ),
    "stack flags without --serving-url": (
        ["--exporter-url", "http://127.0.0.1:9400", "--kernel-log", "kern.log"],
        "--exporter-url, --kernel-log describe a stack named with --serving-url",
    ),
}


@pytest.mark.parametrize("mode", [["--dry-run"], ["--json"]], ids=["dry run", "real run"])
@pytest.mark.parametrize("flags", list(STACK_TARGETS.values()), ids=list(STACK_TARGETS))
def test_a_bad_stack_target_is_one_line_naming_its_flag_before_anything_runs(
    mode: list[str], flags: tuple[list[str], str], tmp_path: Path
) -> None:
    """A typo'd or disallowed target used to be found by the first action: in a real run under the live table
    (every experiment row printed), with --out made, and without the flag's name; stack flags without
    --serving-url were silently ignored."""
    args, message = flags
    out = tmp_path / "out"
    done = run_gpuobs("gameday", "serving-slow-kernel", *args, *mode, "--out", str(out))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert message in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == "" and not out.exists()


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["loadtest", "http://127.0.0.1:1", "--rate", "inf"], {}),
        (["loadtest", "http://127.0.0.1:1", "--duration", "nan"], {}),
        (["export", "--backend", "sim", "--port", "0"], {"GPUOBS_EXPORT_OTLP_INTERVAL": "nan"}),
        (["serve", "--drain-timeout-s", "inf", "--port", "0"], {}),
        (["demo", "--interval", "-inf"], {}),
    ],
    ids=["loadtest rate", "loadtest duration", "export from the environment", "serve", "demo"],
)
def test_no_number_option_takes_nan_or_inf(args: list[str], env: dict[str, str]) -> None:
    """click's float type takes `nan` and `inf`, and the verbs' own checks let them through (`inf > 0`) or
    named them obscurely (`nan > 0` is false): `--rate inf` went on to load the server. One check covers every
    verb's NUMBER options, however given."""
    done = subprocess.run(
        [GPUOBS, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TERM": "dumb", "GPUOBS_CONFIG": os.devnull, "COLUMNS": "250", **env},
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "is not a finite number" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize(
    "args", [["dashboards", "alerts"], ["dashboards", "alerts", "--json"], ["diagnose", "--list-signatures"]]
)
def test_a_full_disk_under_stdout_is_one_line_not_a_traceback(args: list[str]) -> None:
    """`gpuobs ... > out.json` on a full disk: the write's OSError escaped from inside rich or click as a
    traceback (and the interpreter's last flush printed another). Now one line and sysexits' EX_IOERR."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [GPUOBS, *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env={**os.environ, "TERM": "dumb", "GPUOBS_CONFIG": os.devnull},
        )
    assert done.returncode == 74, done.stderr
    assert done.stderr.strip() == "error: a write failed: No space left on device", done.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--gpus", "4"], "--gpus applies only with --exporter-only"),
        (["--scrapes", "2", "--interval", "0"], "--scrapes, --interval apply only with --exporter-only"),
        (["--exporter-only", "--out", "reports"], "--out is the game-day demo's folder"),
    ],
)
def test_a_demo_option_the_chosen_demo_would_ignore_is_refused(args: list[str], words: str) -> None:
    """`gpuobs demo --gpus 4` ran the whole game-day demo (a minute or two) and never used the 4; `--out`
    with --exporter-only wrote nothing there. Said at once, before any stack starts."""
    done = run_gpuobs("demo", *args)
    assert done.returncode == 2 and words in done.stderr, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout == "" and "Traceback" not in done.stderr
