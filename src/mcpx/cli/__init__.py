"""The ``mcpx`` command line."""

from ._main import main

__all__ = ["main"]
