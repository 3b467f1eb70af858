"""Fixtures for the tests of serving: the reference stack and its load tester."""
