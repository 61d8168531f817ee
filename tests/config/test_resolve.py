"""Resolution: precedence of the four sources, origins, Settings, as_json and the policy."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from mcpx.config import (
    SETTINGS,
    ConfigFile,
    Origin,
    OriginKind,
    SettingError,
    Settings,
    UnknownSettingError,
    parse_config_text,
    resolve,
)
from mcpx.spec import Policy

FILE = Path("/proj/.mcpx.json")


def _file(settings: str) -> ConfigFile:
    return parse_config_text(f'{{"settings": {settings}}}', FILE)


def _defaults() -> Settings:
    return resolve(file=None, env={}, flags={})


# (file settings, env, flags) -> the value of pool.max and where it came from.
@pytest.mark.parametrize(
    ("file", "env", "flags", "value", "origin"),
    [
        (None, {}, {}, 4, Origin(OriginKind.DEFAULT)),
        ('{"pool.max": 5}', {}, {}, 5, Origin(OriginKind.FILE, str(FILE))),
        ('{"pool": {"max": "5"}}', {}, {}, 5, Origin(OriginKind.FILE, str(FILE))),
        ('{"pool.max": 5}', {"MCPX_POOL_MAX": "6"}, {}, 6, Origin(OriginKind.ENV, "MCPX_POOL_MAX")),
        (None, {"MCPX_POOL_MAX": "6"}, {}, 6, Origin(OriginKind.ENV, "MCPX_POOL_MAX")),
        (
            '{"pool.max": 5}',
            {"MCPX_POOL_MAX": "6"},
            {"pool.max": "7"},
            7,
            Origin(OriginKind.FLAG, "--pool-max"),
        ),
        (None, {}, {"--pool-max": "7"}, 7, Origin(OriginKind.FLAG, "--pool-max")),
        ('{"pool.max": 5}', {}, {"pool.max": "7"}, 7, Origin(OriginKind.FLAG, "--pool-max")),
    ],
)
def test_default_below_file_below_env_below_flag(
    file: str | None, env: dict[str, str], flags: dict[str, str], value: int, origin: Origin
) -> None:
    settings = resolve(file=None if file is None else _file(file), env=env, flags=flags)
    assert settings["pool.max"] == value
    assert settings.origin("pool.max") == origin
    # Nothing else moved.
    assert settings.origin("pool.callTimeout") == Origin(OriginKind.DEFAULT)


def test_every_source_at_once_reports_each_origin() -> None:
    settings = resolve(
        file=_file('{"pool.callTimeout": "30s", "spec": {"lenient": ["2026-07-28"]}}'),
        env={"MCPX_PROTO_NATIVE": "off", "UNRELATED": "x"},
        flags={"--port": "8899", "log.level": "debug"},
    )
    expected = {
        "pool.callTimeout": (30.0, "file /proj/.mcpx.json"),
        "spec.lenient": (("2026-07-28",), "file /proj/.mcpx.json"),
        "proto.native": (False, "env MCPX_PROTO_NATIVE"),
        "daemon.port": (8899, "flag --port"),
        "log.level": ("debug", "flag --log-level"),
        "pool.max": (4, "default"),
    }
    for name, (value, origin) in expected.items():
        assert (settings[name], str(settings.origin(name))) == (value, origin)


@pytest.mark.parametrize(
    ("env", "value", "var"),
    [
        ({"MCPX_MCP_SPEC": "2025-06-18"}, "2025-06-18", "MCPX_MCP_SPEC"),
        ({"MCPX_SPEC_FIRST": "2025-03-26"}, "2025-03-26", "MCPX_SPEC_FIRST"),
        # Both set: the derived variable wins over the alias.
        (
            {"MCPX_MCP_SPEC": "2025-06-18", "MCPX_SPEC_FIRST": "2025-03-26"},
            "2025-03-26",
            "MCPX_SPEC_FIRST",
        ),
    ],
)
def test_env_alias_and_derived_variable(env: dict[str, str], value: str, var: str) -> None:
    settings = resolve(file=None, env=env, flags={})
    assert settings["spec.first"] == value
    assert settings.origin("spec.first") == Origin(OriginKind.ENV, var)


@pytest.mark.parametrize(
    ("flag", "text", "name", "value"),
    [
        ("--mcp-spec", "2025-11-25", "spec.first", "2025-11-25"),
        ("--port", "9000", "daemon.port", 9000),
        ("--address", "0.0.0.0", "daemon.address", "0.0.0.0"),
        ("--passthrough", "demo,tasks", "mcp.passthrough", ("demo", "tasks")),
        ("--state-dir", "/var/mcpx", "state.dir", "/var/mcpx"),
    ],
)
def test_flag_aliases_set_their_setting_and_are_reported_as_written(
    flag: str, text: str, name: str, value: object
) -> None:
    settings = resolve(file=None, env={}, flags={flag: text})
    assert settings[name] == value
    assert settings.origin(name) == Origin(OriginKind.FLAG, flag)


def test_a_setting_given_by_two_flags_is_refused() -> None:
    with pytest.raises(
        SettingError, match=r"daemon.port is given twice, as --port and as --daemon-port"
    ):
        resolve(file=None, env={}, flags={"--port": "1", "--daemon-port": "2"})


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"pool.mx": "1"}, r"unknown setting 'pool.mx'; did you mean pool.max\?"),
        ({"--pool-mx": "1"}, r"unknown setting flag '--pool-mx'; did you mean --pool-max\?"),
    ],
)
def test_unknown_flag_keys_are_refused(flags: dict[str, str], message: str) -> None:
    with pytest.raises(SettingError, match=message):
        resolve(file=None, env={}, flags=flags)


def test_a_hand_made_file_is_checked_at_resolution() -> None:
    bad_name = ConfigFile(FILE, settings={"pool.mx": 1})
    with pytest.raises(UnknownSettingError, match=r"did you mean pool\.max"):
        resolve(file=bad_name, env={}, flags={})
    bad_value = ConfigFile(FILE, settings={"pool.max": 0})
    with pytest.raises(SettingError, match=r"^pool.max from file /proj/.mcpx.json has invalid"):
        resolve(file=bad_value, env={}, flags={})


def test_only_the_winning_source_is_read() -> None:
    # A bad variable that a flag overrides does not stop anything.
    settings = resolve(file=None, env={"MCPX_POOL_MAX": "lots"}, flags={"pool.max": "2"})
    assert settings["pool.max"] == 2
    with pytest.raises(SettingError, match=r"^pool.max from env MCPX_POOL_MAX has invalid"):
        resolve(file=None, env={"MCPX_POOL_MAX": "lots"}, flags={})


def test_an_empty_variable_is_a_value_not_an_absence() -> None:
    settings = resolve(
        file=_file('{"transport.allowedOrigins": ["https://a.example"]}'),
        env={"MCPX_TRANSPORT_ALLOWED_ORIGINS": "", "MCPX_MCP_SPEC": ""},
        flags={},
    )
    assert settings["transport.allowedOrigins"] == ()
    assert settings["spec.first"] is None
    assert settings.origin("spec.first") == Origin(OriginKind.ENV, "MCPX_MCP_SPEC")


def test_settings_is_an_immutable_mapping_in_registry_order() -> None:
    settings = _defaults()
    assert list(settings) == list(SETTINGS)
    assert len(settings) == len(SETTINGS)
    assert "pool.max" in settings
    assert settings.get("pool.mx") is None
    with pytest.raises(TypeError):
        settings["pool.max"] = 3  # type: ignore[index]
    with pytest.raises(UnknownSettingError, match=r"did you mean pool\.max"):
        settings["pool.mx"]
    with pytest.raises(UnknownSettingError):
        settings.origin("pool.mx")


def test_state_dir_default_is_computed_when_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platformdirs, "user_state_dir", lambda app: f"/elsewhere/{app}")
    settings = _defaults()
    assert settings["state.dir"] == "/elsewhere/mcpx"
    assert settings.origin("state.dir") == Origin(OriginKind.DEFAULT)


def test_state_dir_default_is_platformdirs() -> None:
    assert _defaults()["state.dir"] == platformdirs.user_state_dir("mcpx")


def test_as_json_lists_every_setting_with_its_forms() -> None:
    settings = resolve(file=None, env={"MCPX_POOL_CALL_TIMEOUT": "90s"}, flags={"--port": "81"})
    rows = settings.as_json()
    assert [row["name"] for row in rows] == list(SETTINGS)
    by_name = {row["name"]: row for row in rows}
    assert by_name["pool.callTimeout"] == {
        "name": "pool.callTimeout",
        "kind": "duration",
        "value": 90,
        "display": "1m30s",
        "origin": {"kind": "env", "detail": "MCPX_POOL_CALL_TIMEOUT"},
        "env": "MCPX_POOL_CALL_TIMEOUT",
        "flag": "--pool-call-timeout",
        "aliases": [],
        "default": "2m",
        "doc": SETTINGS["pool.callTimeout"].doc,
    }
    assert by_name["daemon.port"]["origin"] == {"kind": "flag", "detail": "--port"}
    assert by_name["daemon.port"]["aliases"] == ["--port"]
    assert by_name["spec.first"]["value"] is None
    assert by_name["spec.first"]["display"] == "none"
    assert by_name["spec.precedence"]["value"] == [
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    ]
    assert by_name["state.dir"]["default"] == "the platform's user state directory for mcpx"
    assert by_name["pool.max"]["origin"] == {"kind": "default", "detail": None}


def test_display_renders_the_value() -> None:
    settings = resolve(file=None, env={}, flags={"--pool-idle-timeout": "5400"})
    assert settings.display("pool.idleTimeout") == "1h30m"
    assert settings.display("proto.native") == "true"


@pytest.mark.parametrize(
    ("flags", "precedence", "lenient"),
    [
        ({}, ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"), ()),
        (
            {"spec.precedence": "2025-06-18"},
            ("2025-06-18", "2026-07-28", "2025-11-25", "2025-03-26", "2024-11-05"),
            (),
        ),
        (
            {"--mcp-spec": "2024-11-05"},
            ("2024-11-05", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"),
            (),
        ),
        (
            {"spec.precedence": "2025-03-26,2025-11-25", "spec.first": "2025-11-25"},
            ("2025-11-25", "2025-03-26", "2026-07-28", "2025-06-18", "2024-11-05"),
            (),
        ),
        (
            {"spec.lenient": "2026-07-28,2024-11-05"},
            ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"),
            ("2024-11-05", "2026-07-28"),
        ),
    ],
)
def test_policy_is_built_from_the_three_spec_settings(
    flags: dict[str, str], precedence: tuple[str, ...], lenient: tuple[str, ...]
) -> None:
    policy = resolve(file=None, env={}, flags=flags).policy()
    assert policy == Policy(precedence, frozenset(lenient))
    assert policy.first() == precedence[0]
    assert all(not policy.strict(rev) for rev in lenient)


def test_default_policy_is_the_spec_default() -> None:
    assert _defaults().policy() == Policy()


def test_settings_needs_every_setting() -> None:
    with pytest.raises(ValueError, match="missing"):
        Settings({"pool.max": 1}, {"pool.max": Origin(OriginKind.DEFAULT)})
