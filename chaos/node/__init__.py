"""Chaos activities against a node: simulated GPU faults of `gpuobs export`, Xid lines in the kernel log."""
