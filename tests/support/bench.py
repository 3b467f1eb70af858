"""Load a script of bench/ as a module, so tests call its `main()` and helpers as a user runs them."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from support.paths import REPO_ROOT

__all__ = ["load_bench_script"]


def load_bench_script(name: str) -> ModuleType:
    """bench/<name>.py imported under `name` (registered in sys.modules: dataclasses in it need that), with
    bench/ at the end of the module path, as `python bench/<name>.py` has it, for its sibling modules."""
    folder = str(REPO_ROOT / "bench")
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
