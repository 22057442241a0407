"""What tests need beyond the benches' in-process server (server/bench/inprocess.py): waiting
for a condition and reading a page as text."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp


async def page_text(srv: Any, path: str) -> str:
    """A GET's body as text (/metrics, the pages)."""
    async with aiohttp.ClientSession() as http, http.get(srv.url + path) as r:
        return await r.text()


async def wait_for(predicate: Any, timeout: float = 20.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")
