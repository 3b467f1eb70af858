"""The repository's component folders, read from the one place that lists them: pyproject.toml.

`[tool.setuptools] package-dir` maps each component folder to its import name (`exporters` ->
`gpuobs.exporters`). The Makefile, the GPU benchmark script and the tests derive the list from here
instead of spelling it again. Standard library only, so it runs before any install:

    python3 tools/repo_layout.py components          # exporters rca chaos serving kernels dashboards
    python3 tools/repo_layout.py folders             # gpuobs exporters rca ...
    python3 tools/repo_layout.py link-tree DEST      # DEST/gpuobs laid out as the installed package
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tomllib
from pathlib import Path

__all__ = ["ROOT", "components", "link_tree", "package_dir", "source_folders"]

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "gpuobs"


def package_dir(root: Path = ROOT) -> dict[str, str]:
    """`[tool.setuptools] package-dir` of pyproject.toml: import name -> folder."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {str(name): str(folder) for name, folder in mapping.items()}


def components(root: Path = ROOT) -> list[str]:
    """The component folders (`gpuobs.<name>` subpackages), in pyproject order, without the core."""
    return [folder for name, folder in package_dir(root).items() if name != PACKAGE]


def source_folders(root: Path = ROOT) -> list[str]:
    """Every folder that holds package sources: the core `gpuobs` first, then the components."""
    return [package_dir(root)[PACKAGE], *components(root)]


def link_tree(dest: Path, root: Path = ROOT) -> Path:
    """Lay out `dest/gpuobs` as the installed package, one symlink per source file; returns it.

    setuptools maps the component folders into `gpuobs.*` with an import hook that mypy cannot follow
    and that a plain PYTHONPATH does not give; a tree of links serves both without copying.
    """
    target = dest / PACKAGE
    if target.exists():
        shutil.rmtree(target)
    for name, folder in package_dir(root).items():
        _link_files(root / folder, target.joinpath(*name.split(".")[1:]))
    return target


def _link_files(src: Path, dst: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(src):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        out = dst / here.relative_to(src)
        out.mkdir(parents=True, exist_ok=True)
        for filename in filenames:
            if not filename.endswith((".pyc", ".pyo")):
                (out / filename).symlink_to(here / filename)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("components", help="component folders, space-separated")
    sub.add_parser("folders", help="the core folder and the component folders, space-separated")
    tree = sub.add_parser("link-tree", help="lay out DEST/gpuobs as the installed package (symlinks)")
    tree.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.command == "components":
        print(" ".join(components()))
    elif args.command == "folders":
        print(" ".join(source_folders()))
    else:
        print(link_tree(args.dest.resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
