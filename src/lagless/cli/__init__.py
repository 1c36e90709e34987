"""The ``lagless`` command line: thin typer commands over library functions."""
