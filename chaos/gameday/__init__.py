"""`gpuobs gameday`: run experiments against a local or named stack, time each phase, write reports."""
