"""Security headers on every answer: pages, files, JSON and errors alike."""

from __future__ import annotations

from aiohttp import web


def security_headers(allowed_origins: list[str]):
    """An `on_response_prepare` handler. The host panel is never framed (a page of another
    site could otherwise lay it under its own and have the host click); the stage may be,
    by its own pages and the sites `allowed_origins` lets embed it. No answer is sniffed
    into another type, no URL leaks as a referrer, and nothing a host reads is cached."""
    stage_framers = " ".join(["'self'", *allowed_origins])

    async def add(request: web.Request, response: web.StreamResponse) -> None:
        h = response.headers
        h["X-Content-Type-Options"] = "nosniff"
        h["Referrer-Policy"] = "no-referrer"
        path = request.path
        if path == "/host":
            h["Content-Security-Policy"] = "frame-ancestors 'none'"
            h["X-Frame-Options"] = "DENY"
        elif path == "/":
            h["Content-Security-Policy"] = f"frame-ancestors {stage_framers}"
        if path == "/host" or path.startswith("/api/"):
            h["Cache-Control"] = "no-store"

    return add
