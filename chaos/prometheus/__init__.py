"""Chaos probes against a Prometheus server: a PromQL value against a threshold, an alert firing."""
