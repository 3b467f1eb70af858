"""Serving errors share one base and are runtime failures (exit 1), never usage errors (exit 2)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from gpuobs.errors import GpuobsError, InputError, MissingExtraError
from gpuobs.serving import errors
from gpuobs.serving.http.protocol import ApiError


@pytest.mark.parametrize("name", errors.__all__)
def test_every_serving_error_is_a_serving_error_with_exit_code_1(name: str) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, errors.ServingError) and issubclass(cls, GpuobsError)
    assert cls.exit_code == 1


def test_the_http_error_is_a_serving_error_and_usage_errors_stay_exit_2() -> None:
    assert issubclass(ApiError, errors.ServingError)
    assert InputError.exit_code == MissingExtraError.exit_code == 2
    assert GpuobsError.exit_code == errors.ServingError.exit_code == 1


@pytest.mark.parametrize(
    ("raised", "code"),
    [("QueueFullError('queue is full (256 waiting)', 1.0)", 1), ("InputError('bad --port')", 2)],
)
def test_the_cli_exits_with_the_errors_code(raised: str, code: int) -> None:
    """A verb that raises: the real `gpuobs` entry point prints one line and exits with the class's code."""
    script = textwrap.dedent(
        f"""
        import sys
        from gpuobs.cli import app as cli
        from gpuobs.errors import InputError
        from gpuobs.serving.errors import QueueFullError

        @cli.app.command("raise-it")
        def raise_it() -> None:
            raise {raised}

        sys.argv = ["gpuobs", "raise-it"]
        cli.main()
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == code, out.stderr
    assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
