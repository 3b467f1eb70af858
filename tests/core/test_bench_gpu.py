"""bench/gpu.py and bench/gpu.sh, the committed recipe behind the H200 figures, checked offline.

The download and the offline install into a bare venv need the package registry: `make bench-gpu-check`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "bench" / "gpu.py")
assert _spec and _spec.loader
gpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu)


def _gpu_sh(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "bench" / "gpu.sh"), *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={**os.environ, **(env or {})})


def test_requirements_are_pyproject_without_the_heavy_builds() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = gpu.requirements()
    names = {gpu._name(r) for r in reqs}
    assert not names & gpu.HEAVY, "torch/triton/numpy come from the H200 image, never carried"
    for line in [*project["dependencies"], *project["optional-dependencies"]["serving"]]:
        if gpu._name(line) not in gpu.HEAVY:
            assert line in reqs, f"{line} missing from the carried requirements"
    assert {"opentelemetry-sdk", "fastapi", "uvicorn", "bcrypt"} <= names


def test_the_script_knows_exactly_the_benchmarks_gpu_py_lists() -> None:
    script = (ROOT / "bench" / "gpu.sh").read_text()
    cases = set(re.findall(r"^\s+(\w+)\) CMD=", script, flags=re.MULTILINE))
    assert cases == set(gpu.BENCHMARKS)
    for name in gpu.BENCHMARKS:
        assert any((ROOT / "bench" / f"{name}{ext}").is_file() for ext in (".py", ".sh")), name


def test_unknown_benchmark_is_a_usage_error_before_any_setup() -> None:
    out = _gpu_sh("kernel", env={"GPUOBS_WHEELS": "/nonexistent"})
    assert out.returncode == 2
    assert "unknown benchmark 'kernel'" in out.stderr and "kernels" in out.stderr
    assert _gpu_sh().returncode == 2
    out = _gpu_sh("kernels", "exporter_h200", "--", "--quick")
    assert out.returncode == 2 and "exactly one benchmark" in out.stderr


def test_missing_wheels_say_how_to_prepare_them(tmp_path: Path) -> None:
    out = _gpu_sh("kernels", env={"GPUOBS_WHEELS": str(tmp_path), "OUT": str(tmp_path / "out")})
    assert out.returncode == 3
    assert "make bench-gpu-prep" in out.stderr and "build/wheels" in out.stderr


def test_import_sweep_names_a_dependency_that_is_not_installed(tmp_path: Path) -> None:
    """A lazily imported module that is not installed is found without running the code that imports it."""
    pkg = tmp_path / "gpuobs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "lazy.py").write_text("def f() -> None:\n    import no_such_dependency_xyz\n")
    (pkg / "eager.py").write_text("import torch_but_not_really_abc\n")
    code = "import sys; sys.path.insert(0, sys.argv[1]); import gpu; sys.exit(gpu.main(['imports']))"
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "bench")], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "no_such_dependency_xyz: not installed, imported by gpuobs/lazy.py" in out.stderr
    assert "import gpuobs.eager: ModuleNotFoundError" in out.stderr


@pytest.mark.parametrize("name", ["kernels", "serving_engine_gpu", "serving_load"])
def test_each_python_benchmark_takes_the_output_flag_the_script_passes(name: str) -> None:
    script = (ROOT / "bench" / "gpu.sh").read_text()
    flag = re.search(rf"{name}\) CMD=\(python3 bench/{name}\.py[^)]*?(--json(?:-out)?) ", script, re.S)
    assert flag, f"no output flag for {name}"
    source = (ROOT / "bench" / f"{name}.py").read_text()
    assert f'"{flag.group(1)}"' in source, f"bench/{name}.py has no {flag.group(1)} option"
