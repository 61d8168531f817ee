"""Settings for a command: every setting is a flag, generated from the registry.

A command decorated with ``settings_options`` accepts ``--config FILE`` and one
flag per setting (its derived flag and any documented alias). ``--help`` shows the
few a command names as its own (``shown``: ``mcpx serve``'s ``--passthrough``) and says
where the rest are: ``mcpx settings`` lists them all (some sixty would bury the help).
``load_settings`` then resolves defaults < file < environment < flags.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from mcpx.config import (
    CONFIG_FLAG,
    SETTINGS,
    BooleanKind,
    ConfigError,
    ConfigLocation,
    SettingError,
    Settings,
    load_config_file,
    locate_config_file,
    resolve,
)
from mcpx.spec import PolicyError, UnknownRevisionError

__all__ = [
    "Loaded",
    "UsageFailure",
    "load_settings",
    "settings_options",
    "settings_options_showing",
]

F = TypeVar("F", bound=Callable[..., Any])

# click wants identifiers; settings have dotted camelCase names.
_PARAM = {f"setting_{i}": name for i, name in enumerate(SETTINGS)}
_CONFIG_PARAM = "config_file"


class UsageFailure(click.ClickException):
    """A bad setting or config file: exit status 2, like any usage error."""

    exit_code = 2


def settings_options(f: F) -> F:
    """Every setting as a flag on the command, none of them in its help."""
    return _with_settings(f, ())


def settings_options_showing(*shown: str) -> Callable[[F], F]:
    """``settings_options``, the flags of the settings named ``shown`` in the help."""
    return lambda f: _with_settings(f, shown)


def _with_settings(f: F, shown: tuple[str, ...]) -> F:
    for param, name in reversed(_PARAM.items()):
        s = SETTINGS[name]
        hidden = name not in shown
        if isinstance(s.kind, BooleanKind):
            # Alone, a boolean setting's flag means true (`--insecure-no-auth`); a value
            # may follow.
            option = click.option(
                *s.flags,
                param,
                default=None,
                hidden=hidden,
                help=s.doc,
                is_flag=False,
                flag_value="true",
            )
        else:
            option = click.option(*s.flags, param, default=None, hidden=hidden, help=s.doc)
        f = option(f)
    return click.option(
        CONFIG_FLAG,
        _CONFIG_PARAM,
        default=None,
        metavar="FILE",
        help="Config file (default: MCPX_CONFIG, else the nearest .mcpx.json or .mcp.json). "
        "Every setting is a flag too (--pool-call-timeout 30): `mcpx settings` lists them.",
    )(f)


@dataclass(frozen=True)
class Loaded:
    settings: Settings
    config: ConfigLocation | None


def load_settings(params: Mapping[str, Any]) -> Loaded:
    """Resolve every setting for this invocation.

    Raises:
        UsageFailure: a bad config file, setting value or revision.
    """
    flags = {_PARAM[p]: v for p, v in params.items() if p in _PARAM and v is not None}
    try:
        where = locate_config_file(params.get(_CONFIG_PARAM), os.environ, Path.cwd())
        file = load_config_file(where.path) if where else None
        settings = resolve(file=file, env=os.environ, flags=flags)
        settings.policy()  # refuse a policy that cannot be built, here, with the rest
    except (ConfigError, SettingError, UnknownRevisionError, PolicyError) as exc:
        raise UsageFailure(str(exc)) from exc
    return Loaded(settings, where)
