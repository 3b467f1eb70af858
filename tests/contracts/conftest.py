"""Fixtures for the contract tests: two real components run together, each side as it ships."""
