"""Processes by pid, read from /proc: whether one is still there."""

from __future__ import annotations

from pathlib import Path


def proc_stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name, or None when there is no such
    process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def process_gone(pid: int) -> bool:
    """Exited (a zombie nobody reaped counts: it holds nothing)."""
    fields = proc_stat(pid)
    return fields is None or fields[0] in ("Z", "X")
