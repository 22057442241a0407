"""Alerts posted to a webhook (`[alerts] webhook_url`): an operator's chat or pager hears of a
night going wrong before the viewers do.

Each alert is one POST of JSON, `{"show": "allnighter", "alert": {series, value, baseline,
unit, at_ms}}`, sent by a task of its own: the event loop never waits on someone else's
server. At most QUEUED alerts wait (a dead endpoint during a storm of alerts costs a bounded
amount of memory; the oldest are dropped, and counted); each POST has TIMEOUT_S.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp

from .anomalies import Alert

log = logging.getLogger(__name__)

QUEUED = 100
TIMEOUT_S = 5.0


class Webhook:
    def __init__(self, url: str) -> None:
        self.url = url
        self._queue: asyncio.Queue[Alert] = asyncio.Queue(QUEUED)
        self.sent = self.failed = self.dropped = 0

    def alert(self, alert: Alert) -> None:
        """An anomaly listener: queue it, dropping the oldest when full."""
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
        self._queue.put_nowait(alert)

    async def run(self) -> None:
        timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as http:
            while True:
                alert = await self._queue.get()
                body = {"show": "allnighter", "alert": alert.to_json()}
                try:
                    async with http.post(self.url, json=body) as r:
                        r.raise_for_status()
                    self.sent += 1
                except (aiohttp.ClientError, TimeoutError) as exc:
                    self.failed += 1
                    log.warning("webhook %s: %s (the alert is in the log)", self.url, exc)
