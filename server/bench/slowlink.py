"""A slow link on loopback: a TCP proxy in front of the server that hands the viewer what the
server sends a set time late, every chunk when its time comes and in order. A page loaded
through it gets its HTTP answers and its socket's events (the line's visemes among them) that
late, while the show's audio takes its own path (WebRTC over UDP, straight to the server's
loopback address) and is not delayed: the page's events then come after the sound they
describe, as on a viewer's machine whose main thread is held, or behind a proxy that buffers.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

CHUNK = 65536


class SlowLink:
    """`with SlowLink(port, delay_s) as link:` the server at 127.0.0.1:`port`, reached at
    `link.url` with what it sends `delay_s` late (what the viewer sends goes at once)."""

    def __init__(self, port: int, delay_s: float) -> None:
        self.target, self.delay_s = port, delay_s
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.url = ""

    def __enter__(self) -> SlowLink:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self.loop
        ).result(10)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            rest = asyncio.all_tasks() - {asyncio.current_task()}
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _serve(self, viewer_r: asyncio.StreamReader, viewer_w: asyncio.StreamWriter):
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target)
        await asyncio.gather(
            _pipe(viewer_r, server_w, 0.0),
            _pipe(server_r, viewer_w, self.delay_s),
            return_exceptions=True,
        )
        for w in (viewer_w, server_w):
            w.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float):
    """Copy `reader` to `writer`, each chunk `delay_s` after it was read (a reader that keeps
    reading while earlier chunks wait: the delay does not add up)."""
    due: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            at, data = await due.get()
            if not data:
                break
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()

    sending = asyncio.create_task(deliver())
    try:
        while data := await reader.read(CHUNK):
            due.put_nowait((time.monotonic() + delay_s, data))
    finally:
        due.put_nowait((time.monotonic() + delay_s, b""))
        await sending
