"""A real redis-server on 127.0.0.1, for tests and benches of what the show keeps in Redis.

Started as in the project's recipe: its own port, loopback only, nothing saved to disk
(`--save ''`, no append-only file) and its working directory in a temporary folder.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from timesync.tools import which

from .processes import end


def redis_server_path() -> str | None:
    """redis-server's path, or None when Redis is not installed."""
    return which("redis-server")


@contextlib.contextmanager
def redis_on_loopback(tmpdir: str | Path, ready_timeout: float = 5.0) -> Iterator[str]:
    """Run redis-server until the block ends; yields its URL once it answers PING. Raises
    FileNotFoundError when it is not installed, RuntimeError when it does not come up."""
    exe = redis_server_path()
    if exe is None:
        raise FileNotFoundError("redis-server is not installed (apt-get install redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(
        [exe, *args, "--dir", str(tmpdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + ready_timeout
        while not _pong(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not answer on port {port}")
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        end(proc)


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False
