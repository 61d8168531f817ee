"""mcpx: an MCP gateway that speaks every revision in both directions."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mcpx")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = ["__version__"]
