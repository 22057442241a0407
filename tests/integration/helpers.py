"""Small async helpers for talking to a live server."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp


async def say(srv: Any, text: str, **extra: Any) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as http:
        r = await http.post(
            f"{srv.url}/api/v1/say", json={"text": text, **extra}, headers=srv.headers
        )
        return r.status, await r.json()


async def utterance(srv: Any, utt_id: str) -> dict | None:
    async with aiohttp.ClientSession() as http:
        r = await http.get(f"{srv.url}/api/v1/utterances", headers=srv.headers)
        snap = await r.json()
    every = snap["recent"] + snap["queue"] + ([snap["current"]] if snap["current"] else [])
    return next((u for u in every if u["id"] == utt_id), None)


async def until_final(srv: Any, utt_id: str, timeout: float = 60.0) -> dict:
    for _ in range(int(timeout / 0.1)):
        u = await utterance(srv, utt_id)
        if u and u["state"] in ("done", "interrupted", "failed"):
            return u
        await asyncio.sleep(0.1)
    raise AssertionError(f"utterance {utt_id} did not finish")


async def wait_for(predicate: Any, timeout: float = 20.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")
