"""Finding the config file, and the state directory."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import pytest

from mcpx.config import (
    ConfigError,
    ConfigLocation,
    FoundBy,
    find_config_file,
    locate_config_file,
    parse_config_text,
    resolve,
    state_dir,
    user_config_file,
)


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private user config directory (platformdirs is asked at call time)."""
    directory = tmp_path / "user-config" / "mcpx"
    monkeypatch.setattr(
        platformdirs, "user_config_dir", lambda app: str(tmp_path / "user-config" / app)
    )
    return directory


@pytest.fixture
def project(tmp_path: Path, user_dir: Path) -> Path:
    """tmp/project/a/b, with nothing in it yet."""
    deep = tmp_path / "project" / "a" / "b"
    deep.mkdir(parents=True)
    # Discovery walks up to the root: a stray .mcp.json above tmp would change every answer.
    assert locate_config_file(None, {}, deep) is None, "a config file above the test directory"
    return tmp_path / "project"


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("files", "cwd", "found"),
    [
        # Each case: files to create (relative to the project), where mcpx runs, what it finds.
        ([".mcp.json"], "a/b", ".mcp.json"),
        ([".mcpx.json"], "a/b", ".mcpx.json"),
        ([".mcp.json", ".mcpx.json"], "a/b", ".mcpx.json"),
        ([".mcpx.json", "a/.mcp.json"], "a/b", "a/.mcp.json"),
        ([".mcpx.json", "a/b/.mcp.json"], "a/b", "a/b/.mcp.json"),
        (["a/b/.mcp.json", "a/b/.mcpx.json"], "a/b", "a/b/.mcpx.json"),
        (["a/b/.mcpx.json"], "a", None),
    ],
)
def test_nearest_file_walking_up(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: list[str],
    cwd: str,
    found: str | None,
) -> None:
    for name in files:
        _touch(project / name)
    monkeypatch.chdir(project / cwd)
    location = locate_config_file(None, {}, Path.cwd())
    if found is None:
        assert location is None
        assert find_config_file(None, {}, Path.cwd()) is None
    else:
        assert location == ConfigLocation(project / found, FoundBy.NEAREST)
        assert find_config_file(None, {}, Path.cwd()) == project / found
        name = Path(found).name
        assert location.describe() == f"nearest {name} above the working directory"


def test_a_directory_named_like_a_config_file_is_passed_over(project: Path) -> None:
    (project / "a" / ".mcpx.json").mkdir()
    _touch(project / ".mcp.json")
    assert find_config_file(None, {}, project / "a" / "b") == project / ".mcp.json"


def test_relative_cwd_is_taken_from_the_process(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _touch(project / ".mcp.json")
    monkeypatch.chdir(project)
    assert find_config_file(None, {}, Path("a/b")) == project / ".mcp.json"


def test_user_config_file_when_nothing_is_nearer(project: Path, user_dir: Path) -> None:
    assert locate_config_file(None, {}, project / "a" / "b") is None
    _touch(user_dir / "config.json")
    assert user_config_file() == user_dir / "config.json"
    location = locate_config_file(None, {}, project / "a" / "b")
    assert location == ConfigLocation(user_dir / "config.json", FoundBy.USER)
    assert str(location) == f"{user_dir / 'config.json'} (the user config file)"
    # A project file is nearer than the user's.
    _touch(project / ".mcp.json")
    assert find_config_file(None, {}, project / "a" / "b") == project / ".mcp.json"


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CONFIG_HOME is the Linux convention")
def test_user_config_dir_follows_xdg_on_linux(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert user_config_file() == tmp_path / "xdg" / "mcpx" / "config.json"
    _touch(tmp_path / "xdg" / "mcpx" / "config.json")
    (tmp_path / "work").mkdir()
    assert find_config_file(None, {}, tmp_path / "work") == user_config_file()


def test_explicit_and_env_win_over_everything(project: Path, user_dir: Path) -> None:
    _touch(project / "a" / "b" / ".mcpx.json")
    _touch(user_dir / "config.json")
    chosen = _touch(project / "custom.json")
    other = _touch(project / "other.json")
    cwd = project / "a" / "b"
    env = {"MCPX_CONFIG": str(other)}
    by_flag = locate_config_file(str(chosen), env, cwd)
    assert by_flag == ConfigLocation(chosen, FoundBy.FLAG)
    assert str(by_flag) == f"{chosen} (given with --config)"
    by_env = locate_config_file(None, env, cwd)
    assert by_env == ConfigLocation(other, FoundBy.ENV)
    assert str(by_env) == f"{other} (named by MCPX_CONFIG)"
    # A relative name is taken from the working directory given.
    assert find_config_file("../../custom.json", {}, cwd) == cwd / "../../custom.json"
    # An empty MCPX_CONFIG is unset.
    assert find_config_file(None, {"MCPX_CONFIG": ""}, cwd) == cwd / ".mcpx.json"


def test_explicit_name_expands_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    _touch(tmp_path / "mine.json")
    assert find_config_file("~/mine.json", {}, Path("/")) == tmp_path / "mine.json"


@pytest.mark.parametrize(
    ("explicit", "env", "rule"),
    [
        ("missing.json", {}, "given with --config"),
        (None, {"MCPX_CONFIG": "missing.json"}, "named by MCPX_CONFIG"),
    ],
)
def test_a_named_file_that_is_missing_is_an_error(
    project: Path, explicit: str | None, env: dict[str, str], rule: str
) -> None:
    _touch(project / ".mcp.json")  # never a silent fallback to this
    missing = project / "missing.json"
    with pytest.raises(ConfigError) as caught:
        find_config_file(explicit, env, project)
    assert str(caught.value) == f"{missing}: no such config file ({rule})"
    assert caught.value.path == missing


def test_a_named_directory_is_an_error(project: Path) -> None:
    with pytest.raises(ConfigError, match=r": is not a file \(given with --config\)$"):
        find_config_file(str(project / "a"), {}, project)


@pytest.mark.parametrize(
    ("given", "expected"),
    [("/var/lib/mcpx", "/var/lib/mcpx"), ("~/state", "{home}/state"), ("rel", "{cwd}/rel")],
)
def test_state_dir_from_env_or_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, expected: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    settings = resolve(file=None, env={"MCPX_STATE_DIR": given}, flags={})
    want = Path(expected.format(home=tmp_path / "home", cwd=tmp_path))
    assert state_dir(settings) == want
    assert not want.exists()  # nothing is created


def test_state_dir_relative_in_a_file_is_from_the_files_directory(tmp_path: Path) -> None:
    file = parse_config_text(
        '{"settings": {"state": {"dir": ".mcpx-state"}}}', tmp_path / "p" / ".mcpx.json"
    )
    settings = resolve(file=file, env={}, flags={})
    assert state_dir(settings) == tmp_path / "p" / ".mcpx-state"


def test_state_dir_default_is_the_platform_state_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(platformdirs, "user_state_dir", lambda app: str(tmp_path / "state" / app))
    assert state_dir(resolve(file=None, env={}, flags={})) == tmp_path / "state" / "mcpx"
