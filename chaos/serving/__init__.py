"""Chaos activities against `gpuobs serve`: worker signals, engine faults over /admin/faults, load."""
