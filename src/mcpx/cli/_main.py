"""The ``mcpx`` command group; each subcommand lives in its own module."""

from __future__ import annotations

import click

from mcpx import __version__

from ._protocol import protocol
from ._settings import settings_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcpx")
def cli() -> None:
    """mcpx: many MCP servers, kept warm, offered as one."""


cli.add_command(settings_command)
cli.add_command(protocol)


def main() -> None:
    cli()
