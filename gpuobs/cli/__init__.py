"""The CLI layer: the only place that imports typer and rich. One module per verb group."""

__all__: list[str] = []
