"""Settings and config files: the registry, value sources, and server definitions.

Every knob is a named ``Setting`` declared once in ``SETTINGS``; its environment variable
and flag are derived from its name. ``resolve`` picks each value from, lowest first: the
built-in default, the config file, the environment, flags, and records where it came from.
The config file (``locate_config_file``, ``load_config_file``) is JSON in the shapes MCP
hosts already write, and a bad one is refused with ``path:line:column: what is wrong``.

Nothing here imports click: the CLI builds its options from ``SETTINGS``.
"""

from ._edit import (
    ConfigEdit,
    EditRefused,
    NoSuchServer,
    ServerExists,
    edit_target,
    plan_edit,
    with_disabled,
    with_server,
    without_server,
    write_edit,
)
from ._file import TOP_LEVEL_KEYS, ConfigFile, load_config_file, parse_config_text
from ._filter_notes import filter_notes
from ._host_configs import (
    HOSTS,
    HostPath,
    host_config_path,
    host_files,
    parse_jsonc,
    put_entry,
    read_host_config,
    serve_entry,
    snippet,
    write_host_config,
)
from ._jsontext import ConfigError
from ._kinds import (
    BooleanKind,
    ChoiceKind,
    DurationKind,
    IntegerKind,
    InvalidValue,
    JSONValue,
    Kind,
    RevisionKind,
    RevisionListKind,
    StringKind,
    StringListKind,
)
from ._log_levels import LEVEL_RANK, more_verbose
from ._paths import (
    CONFIG_NAMES,
    ConfigLocation,
    FoundBy,
    find_config_file,
    locate_config_file,
    state_dir,
    user_config_file,
)
from ._profiles import DEFAULT_PROFILE, UnknownProfile, known_profiles, profile_reach
from ._redact import REDACTED, Redactor, redact_headers, redact_url
from ._registry import (
    CONFIG_ENV,
    CONFIG_FLAG,
    LOG_LEVELS,
    SETTINGS,
    SURFACES,
    UPSTREAM_PROTOCOLS,
    by_flag,
    setting,
)
from ._resolve import Settings, resolve
from ._servers import AUTH_TYPES, SCOPES, TRANSPORTS, ServerConfig
from ._setting import (
    Computed,
    Origin,
    OriginKind,
    Setting,
    SettingError,
    UnknownSettingError,
    env_name,
    flag_name,
)
from ._state_db import StateDiskFull, open_state_db
from ._state_json import write_state_json

__all__ = [
    "AUTH_TYPES",
    "CONFIG_ENV",
    "CONFIG_FLAG",
    "CONFIG_NAMES",
    "DEFAULT_PROFILE",
    "HOSTS",
    "LEVEL_RANK",
    "LOG_LEVELS",
    "REDACTED",
    "SCOPES",
    "SETTINGS",
    "SURFACES",
    "TOP_LEVEL_KEYS",
    "TRANSPORTS",
    "UPSTREAM_PROTOCOLS",
    "BooleanKind",
    "ChoiceKind",
    "Computed",
    "ConfigEdit",
    "ConfigError",
    "ConfigFile",
    "ConfigLocation",
    "DurationKind",
    "EditRefused",
    "FoundBy",
    "HostPath",
    "IntegerKind",
    "InvalidValue",
    "JSONValue",
    "Kind",
    "NoSuchServer",
    "Origin",
    "OriginKind",
    "Redactor",
    "RevisionKind",
    "RevisionListKind",
    "ServerConfig",
    "ServerExists",
    "Setting",
    "SettingError",
    "Settings",
    "StateDiskFull",
    "StringKind",
    "StringListKind",
    "UnknownProfile",
    "UnknownSettingError",
    "by_flag",
    "edit_target",
    "env_name",
    "filter_notes",
    "find_config_file",
    "flag_name",
    "host_config_path",
    "host_files",
    "known_profiles",
    "load_config_file",
    "locate_config_file",
    "more_verbose",
    "open_state_db",
    "parse_config_text",
    "parse_jsonc",
    "plan_edit",
    "profile_reach",
    "put_entry",
    "read_host_config",
    "redact_headers",
    "redact_url",
    "resolve",
    "serve_entry",
    "setting",
    "snippet",
    "state_dir",
    "user_config_file",
    "with_disabled",
    "with_server",
    "without_server",
    "write_edit",
    "write_host_config",
    "write_state_json",
]
