"""How a script's process is confined: bubblewrap's argv and the environment it gets.

Invariants:
- A script sees no inherited variable: its environment is built here from nothing
  (``script_env``), sandboxed or not, so no token or secret of the daemon reaches it.
- Under bubblewrap (``sandboxed_argv``) it sees exactly the Python runtime (read-only),
  a private ``/tmp`` (a tmpfs of bounded size) and its run dir at ``RUN_DIR_INSIDE``
  (read-write: the generated package and the run's socket). Never the user's home or the
  state dir, no network (its own empty network namespace), its own pid namespace (killing
  bubblewrap ends every process inside).
- Run by root, bubblewrap keeps only CAP_SETUID/CAP_SETGID, which the bootstrap spends at
  once to become an unprivileged uid: the kernel ignores RLIMIT_NPROC for root, even root
  mapped into a user namespace.
"""

from __future__ import annotations

import os
import shutil
import site
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

RUN_DIR_INSIDE: Final = "/run/mcpx"
SOCKET_NAME: Final = "run.sock"
# Bound read-only on its own: run by root, bubblewrap starts it before the bootstrap gives
# the run dir's owner (the unprivileged uid) any say, so it cannot live in the run dir.
BOOTSTRAP_INSIDE: Final = "/run/mcpx-bootstrap.py"
PACKAGE_DIR: Final = "pkg"
_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
# The system dirs a dynamically linked interpreter needs; symlinked ones (merged /usr)
# are recreated as symlinks.
_SYSTEM: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_FILES: Final = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime")


def bwrap_path() -> str | None:
    """bubblewrap's executable, when it is installed."""
    return shutil.which("bwrap")


def runtime_dirs() -> list[str]:
    """The dirs holding this Python: its base prefix, the venv and its site-packages
    (each once; a dir inside another listed one is left out)."""
    found = [sys.base_prefix, sys.prefix, *site.getsitepackages()]
    real = sorted({os.path.realpath(p) for p in found if os.path.isdir(p)})
    return [p for p in real if not any(p.startswith(q + os.sep) for q in real if q != p)]


def script_env(*, run_dir: str, run_id: str, home: str) -> dict[str, str]:
    """The whole environment of a script whose run dir is ``run_dir`` (as the script sees it)."""
    return {
        "PATH": _PATH,
        "HOME": home,
        "LANG": "C.UTF-8",
        "PYTHONPATH": f"{run_dir}/{PACKAGE_DIR}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "MCPX_RUN_SOCKET": f"{run_dir}/{SOCKET_NAME}",
        "MCPX_RUN_ID": run_id,
        "MCPX_RUN_DIR": run_dir,
    }


def _parents(path: str) -> list[str]:
    """Every ancestor of ``path`` below ``/``, outermost first."""
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _system_binds() -> list[str]:
    argv: list[str] = []
    for path in _SYSTEM:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for path in _SYSTEM_FILES:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    return argv


def _runtime_binds() -> list[str]:
    argv: list[str] = []
    made: set[str] = set()
    for path in runtime_dirs():
        # Ancestors (e.g. /root, 0700 on the host) are made 0755 so the dropped uid can
        # walk down to the runtime; they hold nothing but the bound dir.
        for parent in _parents(path):
            system = any(parent == s or parent.startswith(s + "/") for s in _SYSTEM)
            if parent not in made and not system:
                argv += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        argv += ["--ro-bind", path, path]
    return argv


def sandboxed_argv(
    bwrap: str,
    command: Sequence[str],
    *,
    run_dir: Path,
    bootstrap: Path,
    env: Mapping[str, str],
    tmp_bytes: int,
    as_root: bool,
) -> list[str]:
    """bubblewrap's argv running ``command`` (paths as the script sees them) with ``env``
    only, ``run_dir`` bound at ``RUN_DIR_INSIDE``, ``bootstrap`` at ``BOOTSTRAP_INSIDE``,
    a ``/tmp`` of ``tmp_bytes`` at most."""
    if as_root:
        # No user namespace (root mapped into one is still exempt from RLIMIT_NPROC); the
        # bootstrap drops to an unprivileged uid with the two capabilities kept for that.
        namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        namespaces += ["--unshare-cgroup-try", "--cap-drop", "ALL"]
        namespaces += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        namespaces = ["--unshare-all"]
    argv = [bwrap, *namespaces, "--die-with-parent", "--new-session"]
    # The private /tmp first: a runtime that lives under /tmp (a checkout there, its venv)
    # is then bound on top of it, not hidden by it.
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(tmp_bytes)]
    argv += ["--tmpfs", "/tmp"]  # 1777: the dropped uid writes there too
    argv += _system_binds() + _runtime_binds()
    argv += ["--perms", "0755", "--dir", "/run", "--ro-bind", str(bootstrap), BOOTSTRAP_INSIDE]
    # No --chdir: bubblewrap, still root, may not enter the run dir; the bootstrap does.
    argv += ["--bind", str(run_dir), RUN_DIR_INSIDE, "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return [*argv, "--", *command]
