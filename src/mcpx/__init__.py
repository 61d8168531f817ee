"""mcpx: an MCP gateway that speaks every revision in both directions."""

# The one place the version is written (pyproject reads it from here): reading it
# from the installed metadata costs every CLI start tens of milliseconds.
__version__ = "0.1.0"

__all__ = ["__version__"]
