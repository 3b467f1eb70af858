"""Fixtures for the tests of kernels: Triton kernels against their references."""
