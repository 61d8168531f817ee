"""The stdio transport: an upstream server as a child process, one JSON frame per line.

``open_stdio`` spawns the server in its own process group and yields a ``StdioTransport``;
leaving the context always ends the whole group and reaps the process. On Linux the server
is also tied to this process: if it dies without leaving the context (``kill -9``), the
kernel kills the server (``_parent_death``), and the group is on record for the next
daemon to end what the server started (``_groups``).

Invariants:

- Frames are written as compact JSON (``dumps`` never emits a raw newline) plus LF, one
  whole frame at a time under a lock, so concurrent sends never interleave.
- stdout is read as lines of at most ``max_frame`` bytes. A longer line, a line that is
  not JSON, or JSON that is not an object (or a batch of objects) ends the transport:
  a peer that breaks framing cannot be resynchronised.
- stderr is always drained, whatever the consumer of ``receive()`` does, so a chatty
  server never blocks on a full pipe. Each line goes to ``on_stderr`` (sync, cheap) and
  the last ``STDERR_TAIL`` lines are kept for error messages.
- The process exiting is seen at once: sends raise ``TransportClosed`` naming the exit
  status and the last stderr lines; ``receive()`` raises it after the frames written
  before the exit (given ``_DRAIN_GRACE`` to arrive: a grandchild may hold the pipe).
- Every task runs in the transport's task group, owned by the ``open_stdio`` context.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Final

import anyio
from anyio.abc import ByteReceiveStream

from mcpx.wire import McpError, RequestId, dumps

from ._base import MAX_FRAME_BYTES, Inbound, TransportClosed
from ._frames import BadFrame, parse_frames, snippet
from ._groups import next_record
from ._inbox import Inbox
from ._lines import LineSplitter
from ._parent_death import die_with_parent
from ._pipes import PipeReceiveStream, PipeSendStream

__all__ = ["STDERR_TAIL", "StdioTransport", "open_stdio"]

STDERR_TAIL: Final = 20  # stderr lines kept for the exit message
_STDERR_LINE_MAX: Final = 4096  # bytes kept of one stderr line; the rest is dropped
_READ_CHUNK: Final = 65536
_DRAIN_GRACE: Final = 1.0  # after exit: time for the pipes to reach EOF
_STDOUT_EOF_GRACE: Final = 2.0  # after stdout EOF: time for the process to exit
_STDIN_GRACE: Final = 2.0  # after closing stdin: time to exit on its own
_TERM_GRACE: Final = 2.0  # after SIGTERM: time before SIGKILL
_KILL_GRACE: Final = 5.0  # after SIGKILL: only a process stuck in the kernel lasts this long


class StdioTransport:
    """A ``Transport`` over a child process's stdin and stdout."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        stdin: PipeSendStream,
        stdout: PipeReceiveStream,
        stderr: PipeReceiveStream,
        command: str,
        on_stderr: Callable[[str], None],
        max_frame: int,
    ) -> None:
        self._process = process
        self._stdin = stdin
        self._stdout = stdout
        self._stderr = stderr
        self._command = command
        self._on_stderr = on_stderr
        self._max_frame = max_frame
        self._inbox = Inbox()
        # stdout's lines, split as read (by the reading task, or in the loop's callback
        # for answers once routed: ``_answers_now``).
        self._splitter = LineSplitter(max_frame)
        self._broke: TransportClosed | None = None  # why stdout's framing broke
        # Uncontended (the usual case), taking it costs no trip through the event loop.
        self._write_lock = anyio.Lock(fast_acquire=True)
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._exited = anyio.Event()
        self._stdout_done = anyio.Event()
        self._stderr_done = anyio.Event()
        self._stdout_scope = anyio.CancelScope()

    @property
    def pid(self) -> int:
        """The child's process id (also its process group id)."""
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the child has exited (negative: killed by that signal)."""
        return self._process.returncode if self._exited.is_set() else None

    @property
    def stderr_tail(self) -> list[str]:
        """The last stderr lines, oldest first."""
        return list(self._stderr_tail)

    async def send(self, frame: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        """Write one frame as a line on the child's stdin; ``headers`` mean nothing here.

        Raises:
            TransportClosed: the transport is over (the message says why: exit status and
                last stderr lines when the process exited).
            mcpx.wire.InternalError: ``frame`` holds something JSON cannot carry.
        """
        self._raise_if_over()
        line = dumps(frame) + b"\n"
        try:
            if not self._write_lock.locked():
                # Nobody writing: what the pipe takes now goes at once, with no lock and
                # no checkpoint (each costs more than the write); only a rest waits.
                line = line[self._stdin.send_nowait(line) :]
                if not line:
                    return
            async with self._write_lock:
                self._raise_if_over()
                await self._stdin.send(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            # A broken pipe means the child is exiting; wait for its status to say why.
            with anyio.move_on_after(_DRAIN_GRACE + _STDOUT_EOF_GRACE):
                await self._exited.wait()
            self._raise_if_over()
            raise TransportClosed(f"{self._command} closed its stdin") from exc

    def send_now(self, frame: dict[str, Any]) -> bool:
        """Write ``frame`` as one line now, whole or not at all, without waiting: only a
        line of at most ``PIPE_BUF`` bytes (a pipe takes such a write whole or refuses
        it), while nobody else is writing and the transport is not over. False: nothing
        was written (send it with ``send``)."""
        if self._write_lock.locked() or self._inbox.reason is not None or self._exited.is_set():
            return False
        try:
            line = dumps(frame) + b"\n"
        except McpError:
            return False  # send() says why
        if len(line) > select.PIPE_BUF:
            return False
        try:
            return self._stdin.send_nowait(line) == len(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False

    async def receive(self) -> Inbound:
        """The next frame from the child's stdout.

        Raises:
            TransportClosed: the transport is over; nothing more will arrive.
        """
        return await self._inbox.get()

    def route(self, route: Callable[[Inbound], None]) -> None:
        """Hand each frame to ``route`` as it arrives (see ``Transport.route``)."""
        self._inbox.route_to(route)
        self._stdout.deliver_to(self._answers_now)

    def _answers_now(self, chunk: bytes) -> bool:
        """Routed, a chunk of answers only goes to the route in the loop's own callback:
        a caller's answer wakes it with no hop through the reading task. A chunk that
        may hold a request or a notification (their handling may start tasks) is left to
        that task (False)."""
        if b'"method"' in chunk or self._broke is not None or self._inbox.reason is not None:
            return False
        frames, broke = self._frames_of(chunk)
        for frame in frames:
            self._inbox.put_now(frame)
        if broke is not None:
            self._stdout.deliver_to(None)
            self._broke = broke
            self._inbox.close(broke)
        return True

    async def abort(self, request_id: RequestId) -> bool:
        """stdio has no per-request stream: always False (cancel in-band instead)."""
        return False

    def describe(self) -> dict[str, Any]:
        """``{"transport": "stdio", "pid": …, "command": …}``."""
        return {"transport": "stdio", "pid": self.pid, "command": self._command}

    def http_session(self) -> None:
        """stdio keeps no HTTP session: always None."""
        return None

    # -- background tasks ------------------------------------------------------------------

    async def _pump_stdout(self) -> None:
        stdout = self._stdout
        reason: TransportClosed | None = None
        try:
            with self._stdout_scope:
                reason = await self._read_frames(stdout)
                if reason is not None:
                    self._inbox.close(reason)
                    # Keep the pipe empty: a child blocked writing to it would never get
                    # to notice its stdin closing, and would have to be killed.
                    while await _read_chunk(stdout):
                        pass
        finally:
            self._stdout_done.set()
        if self._stdout_scope.cancelled_caught or reason is not None:
            return  # the transport has ended (here, or by the exit watcher)
        # stdout ended: the server is shutting down; its exit status is the better reason.
        with anyio.move_on_after(_STDOUT_EOF_GRACE):
            await self._exited.wait()
        if not self._exited.is_set():  # else the exit watcher ends it, with the status
            self._inbox.close(TransportClosed(f"{self._command} closed its stdout"))

    async def _read_frames(self, stdout: ByteReceiveStream) -> TransportClosed | None:
        """Queue each stdout line's frames; the reason the stream broke, None at EOF."""
        while chunk := await _read_chunk(stdout):
            if self._broke is not None:
                return self._broke  # broken in the loop's callback (``_answers_now``)
            frames, broke = self._frames_of(chunk)
            for frame in frames:
                if not await self._inbox.put(frame):
                    return None  # closed meanwhile; the reason is already set
            if broke is not None:
                return broke
        if self._broke is not None:
            return self._broke
        # A last line without its newline is still a frame: the peer exited right after.
        tail = self._splitter.finish()
        if tail is None:
            return None
        frames, broke = self._frames_of(b"", tail)
        for frame in frames:
            if not await self._inbox.put(frame):
                return None
        return broke

    def _frames_of(
        self, chunk: bytes, last: bytes | None = None
    ) -> tuple[list[Inbound], TransportClosed | None]:
        """The frames of the lines ``chunk`` completes (or of the ``last`` line), and
        why stdout can be read no further, if it cannot: a line that is no JSON-RPC
        frame, or one over ``max_frame`` bytes. Frames before a bad line still count."""
        frames: list[Inbound] = []
        for line in self._splitter.feed(chunk) if last is None else [last]:
            if not line.strip():
                continue  # a blank line carries nothing; tolerated rather than fatal
            try:
                frames.extend(parse_frames(line))
            except BadFrame as exc:
                return frames, TransportClosed(
                    f"{self._command} wrote a line to stdout that is not a JSON-RPC frame "
                    f"({exc}): {snippet(line)}"
                )
        if self._splitter.overflowed:
            return frames, TransportClosed(
                f"{self._command} wrote a line over {self._max_frame} bytes to stdout"
            )
        return frames, None

    async def _pump_stderr(self) -> None:
        stderr = self._stderr
        splitter = LineSplitter(_STDERR_LINE_MAX, truncate=True)
        try:
            while chunk := await _read_chunk(stderr):
                for line in splitter.feed(chunk):
                    self._stderr_line(line)
            tail = splitter.finish()
            if tail is not None:
                self._stderr_line(tail)
        finally:
            self._stderr_done.set()

    def _stderr_line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace")
        self._stderr_tail.append(text)
        # A failing log callback must not take the upstream down with it.
        with contextlib.suppress(Exception):
            self._on_stderr(text)

    async def _watch_exit(self) -> None:
        status = await self._process.wait()
        self._exited.set()
        # Let the pipes reach EOF so the last frames and stderr lines are not lost...
        with anyio.move_on_after(_DRAIN_GRACE):
            await self._stdout_done.wait()
            await self._stderr_done.wait()
        # ...but a grandchild may hold them open: the exit is what ends the transport.
        self._stdout_scope.cancel()
        self._inbox.close(self._exit_reason(status))

    # -- ending ----------------------------------------------------------------------------

    def _raise_if_over(self) -> None:
        if self._inbox.reason is not None:
            raise self._inbox.closed_error()
        status = self._process.returncode
        if self._exited.is_set() and status is not None:
            raise self._exit_reason(status)

    def _exit_reason(self, status: int) -> TransportClosed:
        described = f"exited with status {status}"
        if status < 0:
            with contextlib.suppress(ValueError):
                described += f" ({signal.Signals(-status).name})"
        tail = " | ".join(self._stderr_tail)
        last = f"last stderr: {tail}" if tail else "no stderr output"
        return TransportClosed(f"{self._command} {described}; {last}")

    async def _stop(self) -> None:
        """Close stdin, then SIGTERM, then SIGKILL the group, each after a bounded wait."""
        self._stdin.close()  # the child reads EOF: a stdio server ends on it
        for grace, signum in ((_STDIN_GRACE, signal.SIGTERM), (_TERM_GRACE, signal.SIGKILL)):
            if await self._exit_within(grace):
                break
            self._signal_group(signum)
        else:
            await self._exit_within(_KILL_GRACE)
        # Once the leader is gone nobody speaks for the rest of its group: end them too.
        self._signal_group(signal.SIGKILL)

    async def _exit_within(self, seconds: float) -> bool:
        # Waits on the process itself, not on the exit watcher: when closing runs under
        # cancellation, the watcher task is already cancelled.
        with anyio.move_on_after(seconds):
            await self._process.wait()
            self._exited.set()
        return self._exited.is_set()

    def _signal_group(self, signum: signal.Signals) -> None:
        # start_new_session made the child a group leader: its pid is the group id. The
        # group id cannot be reused while any member lives, so this never hits strangers.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def _release(self) -> None:
        self._inbox.discard()
        # Our ends of the pipes. The process needs nothing more: the loop reaps it when it
        # exits (it already has, unless it is stuck in the kernel).
        self._stdin.close()
        self._stdout.close()
        self._stderr.close()


async def _read_chunk(stream: ByteReceiveStream) -> bytes:
    """The next chunk, or b"" at EOF; a pipe closed under us counts as EOF."""
    try:
        return await stream.receive(_READ_CHUNK)
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        return b""


@contextlib.asynccontextmanager
async def open_stdio(
    command: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    *,
    on_stderr: Callable[[str], None],
    max_frame: int = MAX_FRAME_BYTES,
) -> AsyncIterator[StdioTransport]:
    """Spawn ``command args`` and yield a transport over its stdio.

    ``env`` is merged over ``os.environ``. The child gets its own session and process
    group, so closing ends everything it started. On leaving the context: stdin is closed,
    then after ``_STDIN_GRACE`` seconds the group gets SIGTERM, after ``_TERM_GRACE`` more
    SIGKILL; the process is always reaped.

    Raises:
        TransportClosed: the command could not be started (not found, not executable,
            bad ``cwd``, or it could not be tied to this process); the error is chained.
    """
    # The child's stdin, stdout and stderr are pipes of our own, read and written directly
    # (``_pipes``): cheaper per frame than the loop's subprocess streams. With no pipe of
    # the loop's, its process object also sees the exit at once, whoever holds the pipes.
    child_in, our_in = os.pipe()
    our_out, child_out = os.pipe()
    our_err, child_err = os.pipe()
    stdin = PipeSendStream(our_in)
    stdout, stderr = PipeReceiveStream(our_out), PipeReceiveStream(our_err)
    record = next_record()
    try:
        try:
            # Ready before the child exists, so that nothing can fail once it runs.
            stdin.start()
            await stdout.start()
            await stderr.start()
            # asyncio's rather than anyio.open_process, which takes no preexec_fn. The fork
            # happens here, in the event loop's thread, which lives as long as the daemon:
            # the parent-death signal is tied to the thread that forked (_parent_death).
            process = await asyncio.create_subprocess_exec(
                command,
                *args,
                stdin=child_in,
                stdout=child_out,
                stderr=child_err,
                env={**os.environ, **(env or {}), **(record.env if record else {})},
                cwd=cwd,
                start_new_session=True,
                preexec_fn=die_with_parent(),
            )
        finally:
            for fd in (child_in, child_out, child_err):
                os.close(fd)  # the child has its own copies now (or none: not started)
    except BaseException as exc:
        stdin.close()
        stdout.close()
        stderr.close()
        if isinstance(exc, OSError):
            raise TransportClosed(f"cannot start {command}: {exc.strerror or exc}") from exc
        if isinstance(exc, subprocess.SubprocessError):  # preexec_fn failed in the child
            raise TransportClosed(f"cannot start {command}: {exc.__cause__ or exc}") from exc
        raise
    if record is not None:
        record.started(process.pid)
    transport = StdioTransport(process, stdin, stdout, stderr, command, on_stderr, max_frame)
    body_error: Exception | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(transport._pump_stdout)
            tg.start_soon(transport._pump_stderr)
            tg.start_soon(transport._watch_exit)
            try:
                yield transport
            except Exception as exc:
                # Re-raised below, outside the task group, so the caller gets its own
                # exception back rather than wrapped in an ExceptionGroup.
                body_error = exc
            finally:
                transport._inbox.close(TransportClosed(f"{command}: transport closed"))
                with anyio.CancelScope(shield=True):
                    await transport._stop()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await transport._release()
        if record is not None:
            record.ended()  # the group was ended (_stop): nothing left to reap
    if body_error is not None:
        raise body_error
