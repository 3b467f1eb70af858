"""Allow `python -m gpuobs`."""

from gpuobs.cli.app import main

main()
