"""The CUDA runtime error catalog: codes, both name spellings, categories, error-string parsing."""

from __future__ import annotations

import dataclasses

import pytest

from gpuobs import cuda_errors


def test_well_known_codes() -> None:
    assert cuda_errors.by_code(2).name == "cudaErrorMemoryAllocation"  # type: ignore[union-attr]
    assert cuda_errors.by_code(700).name == "cudaErrorIllegalAddress"  # type: ignore[union-attr]
    assert cuda_errors.by_code(719).name == "cudaErrorLaunchFailure"  # type: ignore[union-attr]
    assert cuda_errors.by_code(999).name == "cudaErrorUnknown"  # type: ignore[union-attr]
    assert cuda_errors.by_code(12345) is None


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("cudaErrorIllegalAddress", 700),
        ("CUDA_ERROR_ILLEGAL_ADDRESS", 700),
        ("cudaerrorillegaladdress", 700),
        ("  cuda_error_illegal_address ", 700),
        ("CUDA_ERROR_OUT_OF_MEMORY", 2),
        ("CUDA_ERROR_INVALID_CONTEXT", 201),
        ("CUDA_ERROR_LAUNCH_FAILED", 719),
        ("CUDA_ERROR_ECC_UNCORRECTABLE", 214),
        ("cudaErrorECCUncorrectable", 214),
        ("CUDA_ERROR_NO_BINARY_FOR_GPU", 209),
        ("CUDA_ERROR_NVLINK_UNCORRECTABLE", 220),
        ("CUDA_SUCCESS", 0),
        ("cudaErrorTensorMemoryLeak", 721),
        ("cudaErrorStreamDetached", 917),
    ],
)
def test_by_name_accepts_both_spellings(name: str, code: int) -> None:
    found = cuda_errors.by_name(name)
    assert found is not None and found.code == code


def test_unknown_names() -> None:
    assert cuda_errors.by_name("cudaErrorNoSuchThing") is None
    assert cuda_errors.by_name("") is None


def test_catalog_is_complete_and_consistent() -> None:
    errors = cuda_errors.all_errors()
    codes = [e.code for e in errors]
    assert codes == sorted(codes) and len(set(codes)) == len(codes)
    # The whole cudaError_t of CUDA 12.x/13.x: spot-check the ranges and count.
    for code in (*range(0, 10), 34, 35, 36, 46, 98, 100, 101, 200, 201, *range(205, 227), 300, 400, 500, 600,
                 *range(700, 706), *range(708, 722), *range(800, 813), *range(900, 916), 917, 999):
        assert cuda_errors.by_code(code) is not None, code
    assert len(errors) >= 130
    for error in errors:
        assert error.category in cuda_errors.CATEGORIES
        assert error.meaning and error.meaning[-1] == "."
        assert cuda_errors.by_name(error.name) is error
        assert cuda_errors.by_name(error.driver_name) is error
    with pytest.raises(dataclasses.FrozenInstanceError):
        errors[0].code = 5  # type: ignore[misc]


def test_categories_of_notable_errors() -> None:
    def cat(code: int) -> str:
        return cuda_errors.by_code(code).category  # type: ignore[union-attr]

    assert cat(700) == cuda_errors.APPLICATION_BUG
    assert cat(2) == cuda_errors.RESOURCE
    assert cat(214) == cuda_errors.HARDWARE
    assert cat(35) == cuda_errors.DRIVER
    assert cuda_errors.by_code(700).sticky and not cuda_errors.by_code(2).sticky  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("RuntimeError: CUDA error: an illegal memory access was encountered", 700),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 2),
        ("RuntimeError: Triton Error [CUDA]: misaligned address", 716),
        ("CUDA error: device-side assert triggered\nCompile with TORCH_USE_CUDA_DSA", 710),
        ("cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED", 719),
        ("error cudaErrorNoKernelImageForDevice at foo.cu:12", 209),
        ("CUDA error: uncorrectable ECC error encountered", 214),
    ],
)
def test_from_text(text: str, code: int) -> None:
    found = cuda_errors.from_text(text)
    assert found is not None and found.code == code


def test_from_text_without_error() -> None:
    assert cuda_errors.from_text("all good, no error here") is None
