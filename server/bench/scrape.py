"""What a bench reads off a running server: its /metrics, its JSON endpoints, its memory."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any


def metrics(url: str) -> dict[str, float]:
    """Every sample of the server's /metrics by its name as printed, labels and all
    (`allnighter_frames_sent`, `allnighter_utterances_total{outcome="done"}`)."""
    text = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def get_json(url: str, path: str, token: str | None = None, timeout: float = 10) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"{url}{path}", headers=headers)
    return json.load(urllib.request.urlopen(request, timeout=timeout))


def post_json(url: str, path: str, body: dict, token: str, timeout: float = 10) -> Any:
    request = urllib.request.Request(
        f"{url}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    return json.load(urllib.request.urlopen(request, timeout=timeout))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
