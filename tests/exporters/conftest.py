"""Fixtures for the tests of exporters: the sidecar and the in-process launcher."""
