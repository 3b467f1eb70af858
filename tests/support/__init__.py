"""Test support: real servers (Prometheus) and helpers shared by the test suite."""
