"""The ``mcpx`` command group; each subcommand lives in its own module."""

from __future__ import annotations

import click

from mcpx import __version__

from ._add import edit_commands
from ._auth import auth_group
from ._bridge import bridge_command
from ._daemon import daemon_commands
from ._doctor import doctor_command
from ._elicit import elicit_group
from ._exec import exec_command, run_command, scripts_command
from ._gen import gen_group
from ._import import import_command
from ._install_host import install_host_command
from ._log import log_command, stats_command
from ._ops import op_commands
from ._protocol import protocol
from ._serve import serve_command
from ._settings import settings_command
from ._tasks import task_group
from ._ui import ui_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcpx")
def cli() -> None:
    """mcpx: many MCP servers, kept warm, offered as one."""


@click.command("demo-server")
def demo_server_command() -> None:
    """Run the bundled demo MCP server on stdio (the embedded default upstream)."""
    from mcpx.demo import main as demo_main  # loaded only here: keeps every other start fast

    demo_main()


cli.add_command(settings_command)
cli.add_command(demo_server_command)
cli.add_command(protocol)
cli.add_command(serve_command)
cli.add_command(elicit_group)
cli.add_command(auth_group)
cli.add_command(task_group)
cli.add_command(gen_group)
cli.add_command(import_command)
cli.add_command(install_host_command)
cli.add_command(log_command)
cli.add_command(doctor_command)
cli.add_command(stats_command)
cli.add_command(bridge_command)
cli.add_command(exec_command)
cli.add_command(run_command)
cli.add_command(scripts_command)
cli.add_command(ui_command)
for command in (*daemon_commands(), *op_commands(), *edit_commands()):
    cli.add_command(command)


def main() -> None:
    cli()
