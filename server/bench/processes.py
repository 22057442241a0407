"""The fixtures' processes (chronyd, ptp4l, redis-server): ended the same way."""

from __future__ import annotations

import subprocess


def end(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """Stop a process: asked first (SIGTERM), told (SIGKILL) when it has not gone in `grace_s`."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
