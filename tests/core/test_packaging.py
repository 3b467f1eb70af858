"""The package layout of DESIGN.md: component folders import as gpuobs.<name>; the CLI answers."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from repo_layout import components, package_dir, source_folders

COMPONENTS = components()


def _package_folders(root: Path) -> set[str]:
    names = set()
    for name, folder in package_dir(root).items():
        for init in (root / folder).glob("**/__init__.py"):
            names.add(".".join((*name.split("."), *init.parent.relative_to(root / folder).parts)))
    return names


def test_components_are_the_package_dir_of_pyproject(repo_root: Path) -> None:
    config = tomllib.loads((repo_root / "pyproject.toml").read_text())
    mapping = config["tool"]["setuptools"]["package-dir"]
    assert COMPONENTS, "no component in [tool.setuptools] package-dir"
    assert {f"gpuobs.{c}": c for c in COMPONENTS} == {k: v for k, v in mapping.items() if k != "gpuobs"}
    for folder in source_folders(repo_root):
        assert (repo_root / folder / "__init__.py").is_file(), f"{folder}/ is not a package folder"


def test_every_package_folder_is_listed_in_pyproject(repo_root: Path) -> None:
    config = tomllib.loads((repo_root / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = _package_folders(repo_root)
    assert not found - listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    stale = {name for name in listed - found if not _data_folder(repo_root, name).is_dir()}
    assert not stale, f"no such package folder, drop from packages: {sorted(stale)}"


def _data_folder(root: Path, name: str) -> Path:
    """The folder of a listed data-only package (no __init__.py, e.g. gpuobs.serving.proto)."""
    mapping = package_dir(root)
    prefix = max((p for p in mapping if name == p or name.startswith(p + ".")), key=len)
    rest = name[len(prefix):].lstrip(".")
    return root / mapping[prefix] / Path(*rest.split(".")) if rest else root / mapping[prefix]


def test_dockerfile_copies_every_source_folder(repo_root: Path) -> None:
    """The image builds its wheel from the folders pyproject maps; a component left out breaks it."""
    dockerfile = (repo_root / "deploy" / "Dockerfile").read_text()
    build_stage = dockerfile.split(" AS build", 1)[1].split("\nFROM ", 1)[0]
    copied = re.findall(r"^COPY (\w+)/ \1/$", build_stage, flags=re.MULTILINE)
    assert sorted(copied) == sorted(source_folders(repo_root)), (
        "deploy/Dockerfile's build stage must COPY exactly the folders of [tool.setuptools] package-dir"
    )


@pytest.mark.parametrize("component", COMPONENTS)
def test_component_imports_as_gpuobs_subpackage(component: str, repo_root: Path) -> None:
    module = __import__(f"gpuobs.{component}", fromlist=["__name__"])
    assert Path(module.__file__).resolve().parent == (repo_root / component).resolve()


def test_version_flag() -> None:
    out = subprocess.run([sys.executable, "-m", "gpuobs", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.startswith("gpuobs ")


def test_cli_does_not_import_heavy_engines() -> None:
    code = (
        "import sys, gpuobs.cli.app\n"
        "heavy = [m for m in ('torch', 'triton', 'vllm', 'tensorrt', 'kubernetes') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"CLI start imports heavy modules: {out.stdout}"


@pytest.mark.slow
def test_wheel_builds_quietly_with_license_and_proto(repo_root: Path, tmp_path: Path) -> None:
    """The wheel carries LICENSE and inference.proto (the README points gRPC clients to it), and
    setuptools prints no deprecation or missing-package warning while building it."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path),
         str(repo_root)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    noise = [line for line in (out.stdout + out.stderr).splitlines()
             if "Warning" in line or "deprecat" in line.lower()]
    assert not noise, noise
    import zipfile

    (wheel,) = tmp_path.glob("gpuobs-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "gpuobs/serving/proto/inference.proto" in names
    assert any(n.endswith("/licenses/LICENSE") for n in names)
