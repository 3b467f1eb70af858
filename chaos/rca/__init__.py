"""Chaos probes that ask `gpuobs diagnose` (the library call) what broke."""
