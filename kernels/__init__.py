"""gpuobs.kernels: Triton kernels of a Llama-architecture decoder, each with a PyTorch reference."""

__all__: list[str] = []
