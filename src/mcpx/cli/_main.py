"""Entry point; subcommands are added as their modules land."""

from __future__ import annotations

import click

from mcpx import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcpx")
def cli() -> None:
    """mcpx: many MCP servers, kept warm, offered as one."""


def main() -> None:
    cli()
