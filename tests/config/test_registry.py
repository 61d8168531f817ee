"""The registry: derived names, aliases, lookups, the seeded defaults, the exported API."""

from __future__ import annotations

import pytest

import mcpx.config as config
from mcpx.config import (
    CONFIG_ENV,
    CONFIG_FLAG,
    SETTINGS,
    Computed,
    IntegerKind,
    Setting,
    SettingError,
    StringKind,
    StringListKind,
    UnknownSettingError,
    by_flag,
    env_name,
    flag_name,
    setting,
)

NEWEST_FIRST = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


@pytest.mark.parametrize(
    ("name", "env", "flag"),
    [
        ("pool.callTimeout", "MCPX_POOL_CALL_TIMEOUT", "--pool-call-timeout"),
        (
            "protoMessages.listMaxAge",
            "MCPX_PROTO_MESSAGES_LIST_MAX_AGE",
            "--proto-messages-list-max-age",
        ),
        ("proto.askTTL", "MCPX_PROTO_ASK_TTL", "--proto-ask-ttl"),
        ("transport.sseKeepAlive", "MCPX_TRANSPORT_SSE_KEEP_ALIVE", "--transport-sse-keep-alive"),
        ("upstream.eraCache", "MCPX_UPSTREAM_ERA_CACHE", "--upstream-era-cache"),
        ("state.dir", "MCPX_STATE_DIR", "--state-dir"),
        ("mcp.passthrough", "MCPX_MCP_PASSTHROUGH", "--mcp-passthrough"),
        ("spec.first", "MCPX_SPEC_FIRST", "--spec-first"),
        ("daemon.port", "MCPX_DAEMON_PORT", "--daemon-port"),
    ],
)
def test_env_and_flag_are_derived_from_the_name(name: str, env: str, flag: str) -> None:
    assert (SETTINGS[name].env, SETTINGS[name].flag) == (env, flag)
    assert (env_name(name), flag_name(name)) == (env, flag)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("a.httpURLPath", ("MCPX_A_HTTP_URL_PATH", "--a-http-url-path")),
        ("a.ipv4Only", ("MCPX_A_IPV4_ONLY", "--a-ipv4-only")),
        ("abc.x", ("MCPX_ABC_X", "--abc-x")),
    ],
)
def test_derivation_of_acronyms_and_digits(name: str, words: tuple[str, str]) -> None:
    assert (env_name(name), flag_name(name)) == words


@pytest.mark.parametrize(
    ("name", "envs", "flags"),
    [
        ("spec.first", ("MCPX_SPEC_FIRST", "MCPX_MCP_SPEC"), ("--spec-first", "--mcp-spec")),
        ("daemon.port", ("MCPX_DAEMON_PORT",), ("--daemon-port", "--port")),
        ("daemon.address", ("MCPX_DAEMON_ADDRESS",), ("--daemon-address", "--address")),
        ("mcp.passthrough", ("MCPX_MCP_PASSTHROUGH",), ("--mcp-passthrough", "--passthrough")),
        ("state.dir", ("MCPX_STATE_DIR",), ("--state-dir",)),
        ("pool.max", ("MCPX_POOL_MAX",), ("--pool-max",)),
    ],
)
def test_aliases_add_names_after_the_derived_ones(
    name: str, envs: tuple[str, ...], flags: tuple[str, ...]
) -> None:
    s = SETTINGS[name]
    assert s.envs == envs
    assert s.flags == flags
    for flag in flags:
        assert by_flag(flag) is s


def test_no_two_settings_share_a_name_variable_or_flag() -> None:
    spelled = [x for s in SETTINGS.values() for x in (s.name, *s.envs, *s.flags)]
    assert len(spelled) == len(set(spelled))
    assert CONFIG_ENV not in spelled
    assert CONFIG_FLAG not in spelled


def test_registry_is_read_only_and_in_declaration_order() -> None:
    names = list(SETTINGS)
    assert names[:4] == ["spec.precedence", "spec.first", "spec.lenient", "pool.callTimeout"]
    assert names[-1] == "state.dir"
    with pytest.raises(TypeError):
        SETTINGS["x.y"] = SETTINGS["pool.max"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("typed", "suggestion"),
    [
        ("pool.mx", "pool.max"),
        ("pool.calltimeout", "pool.callTimeout"),
        ("proto.askTtl", "proto.askTTL"),
    ],
)
def test_unknown_name_suggests_the_closest(typed: str, suggestion: str) -> None:
    with pytest.raises(UnknownSettingError) as caught:
        setting(typed)
    assert str(caught.value) == f"unknown setting {typed!r}; did you mean {suggestion}?"
    assert isinstance(caught.value, SettingError)
    assert isinstance(caught.value, KeyError)


def test_unknown_name_with_nothing_close() -> None:
    with pytest.raises(SettingError, match=r"^unknown setting 'zzzz'$"):
        setting("zzzz")


def test_unknown_flag_suggests_the_closest() -> None:
    with pytest.raises(
        SettingError, match=r"unknown setting flag '--pool-mx'; did you mean --pool-max\?"
    ):
        by_flag("--pool-mx")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "poolMax"}, "not dotted camelCase"),
        ({"name": "Pool.max"}, "not dotted camelCase"),
        ({"name": "pool.max_x"}, "not dotted camelCase"),
        ({"aliases": ("-p",)}, "neither --flag nor MCPX_VAR"),
        ({"aliases": ("POOL_MAX",)}, "neither --flag nor MCPX_VAR"),
        ({"aliases": ("--a-b",)}, "repeats the derived name"),
        ({"default": 0}, r"a\.b: the default has invalid value \"0\" \(below the minimum 1\)"),
        ({"kind": StringListKind(), "default": ("x,y",)}, r"default \('x,y',\) reads back as"),
    ],
)
def test_a_bad_declaration_is_refused(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"name": "a.b", "kind": IntegerKind(1), "default": 1, "doc": "d"}
    fields.update(kwargs)
    with pytest.raises(ValueError, match=message):
        Setting(**fields)  # type: ignore[arg-type]


def test_a_computed_default_is_computed_on_each_call() -> None:
    calls: list[int] = []

    def compute() -> str:
        calls.append(1)
        return f"/tmp/{len(calls)}"

    s = Setting("a.dir", StringKind(), Computed(compute, "somewhere"), "d")
    assert (s.default_value(), s.default_value()) == ("/tmp/1", "/tmp/2")
    assert s.describe_default() == "somewhere"


# Every seeded default, as the brief lists it (durations in seconds).
SEEDED: list[tuple[str, object]] = [
    ("spec.precedence", NEWEST_FIRST),
    ("spec.first", None),
    ("spec.lenient", ()),
    ("pool.callTimeout", 120.0),
    ("pool.startTimeout", 60.0),
    ("pool.idleTimeout", 300.0),
    ("pool.max", 4),
    ("pool.restartBackoff", 30.0),
    ("pool.maxArguments", 16 * 1024 * 1024),
    ("upstream.protocol", "prefer-discover"),
    ("upstream.probeTimeout", 2.0),
    ("upstream.eraCache", True),
    ("proto.native", True),
    ("proto.askTimeout", 600.0),
    ("proto.askRounds", 8),
    ("proto.questionsOpen", 16),
    ("proto.questionRate", 5),
    ("proto.askTTL", 900.0),
    ("proto.stateTTL", 1800.0),
    ("proto.sessionIdle", 1800.0),
    ("proto.maxSessions", 10000),
    ("proto.maxSessionStreams", 4),
    ("proto.maxConcurrentCalls", 64),
    ("proto.maxBatch", 64),
    ("proto.maxSubscriptions", 1024),
    ("proto.maxTasks", 1024),
    ("protoMessages.listMaxAge", 60.0),
    ("protoMessages.readMaxAge", 0.0),
    ("protoMessages.taskAfter", 2.0),
    ("transport.sseKeepAlive", 15.0),
    ("transport.stdioDrain", 30.0),
    ("transport.stdioAnswerWait", 0.05),
    ("transport.allowedOrigins", ()),
    ("transport.allowedHosts", ()),
    ("mcp.pageSize", 100),
    ("mcp.passthrough", ()),
    ("mcp.profile", ""),
    ("mcp.surface", "gateway"),
    ("events.history", 1024),
    ("events.maxSubscribers", 64),
    ("exec.timeout", 120.0),
    ("exec.maxTimeout", 3600.0),
    ("exec.maxOutput", 1024 * 1024),
    ("exec.memory", 1024 * 1024 * 1024),
    ("exec.processes", 64),
    ("exec.maxRuns", 16),
    ("exec.sandbox", "auto"),
    ("http.maxBody", 16 * 1024 * 1024),
    ("http.maxSmallBody", 64 * 1024),
    ("http.maxHeaderBytes", 64 * 1024),
    ("http.maxHeaders", 100),
    ("daemon.port", 0),
    ("daemon.address", "127.0.0.1"),
    ("daemon.auth", "none"),
    ("daemon.tokens", ()),
    ("daemon.oauth.issuer", ""),
    ("daemon.oauth.resource", ""),
    ("daemon.oauth.jwksUri", ""),
    ("daemon.oauth.introspectionUrl", ""),
    ("daemon.oauth.clientId", ""),
    ("daemon.oauth.clientSecretEnv", ""),
    ("daemon.oauth.scopes", ()),
    ("daemon.oauth.algorithms", ("RS256", "ES256")),
    ("daemon.insecureNoAuth", False),
    ("daemon.endpoint", ""),
    ("daemon.sshCommand", "ssh"),
    ("daemon.configPoll", 2.0),
    ("daemon.stopGrace", 3.0),
    ("log.level", "info"),
    ("log.frames", ""),
    ("log.payloads", False),
    ("log.keep", 7),
    ("log.keepRows", 100_000),
    ("telemetry.enabled", False),
    ("telemetry.payloads", False),
]


@pytest.mark.parametrize(("name", "default"), SEEDED)
def test_seeded_default(name: str, default: object) -> None:
    assert SETTINGS[name].default == default
    assert type(SETTINGS[name].default) is type(default)
    assert SETTINGS[name].doc


def test_every_setting_is_seeded_and_listed() -> None:
    assert [name for name, _ in SEEDED] + ["state.dir"] == list(SETTINGS)


@pytest.mark.parametrize(
    ("name", "kind", "detail"),
    [
        ("pool.max", "integer", "an integer >= 1"),
        ("proto.askRounds", "integer", "an integer >= 1"),
        ("mcp.pageSize", "integer", "an integer >= 1"),
        ("events.history", "integer", "an integer >= 0"),
        ("daemon.port", "integer", "an integer from 0 to 65535"),
        (
            "upstream.protocol",
            "choice",
            "one of prefer-discover, prefer-initialize, force-discover, force-initialize",
        ),
        (
            "log.level",
            "choice",
            "one of debug, info, notice, warning, error, critical, alert, emergency",
        ),
        (
            "spec.first",
            "revision",
            "one of 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28, or none",
        ),
        (
            "transport.allowedOrigins",
            "string list",
            "a comma-separated list (a JSON array of strings in a file)",
        ),
        ("daemon.address", "string", "a non-empty string"),
        ("state.dir", "string", "a non-empty string"),
        ("proto.native", "boolean", "true, false, 1, 0, yes, no, on or off"),
    ],
)
def test_kind_of_each_bounded_setting(name: str, kind: str, detail: str) -> None:
    assert SETTINGS[name].kind.name == kind
    assert SETTINGS[name].kind.expected == detail


def test_exported_names_are_pinned() -> None:
    assert sorted(config.__all__) == sorted(
        [
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
            "more_verbose",
            "locate_config_file",
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
            "write_edit",
            "without_server",
            "with_server",
            "with_disabled",
            "write_host_config",
            "write_state_json",
        ]
    )
    for name in config.__all__:
        assert hasattr(config, name), name


def test_the_package_does_not_import_click() -> None:
    import subprocess
    import sys

    probe = "import sys, mcpx.config; print('click' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
