"""Fixtures for the tests of rca: parsers, signatures, pipeline, corpora (shared ones: tests/conftest.py)."""
