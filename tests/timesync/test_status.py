"""The time status surface of a running server: GET /api/v1/time and its Prometheus gauges."""

from __future__ import annotations

import asyncio
import math

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from server.bench.inprocess import LiveServer
from server.bench.ntpserver import NTPResponder
from server.config import load_config
from server.loading import Models
from tests.fakes import ToneTTS, WordsLLM


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """Prometheus text → {(sample name, sorted labels): value}."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_show_the_fused_clock_and_each_ntp_source_with_the_outvoted_one_rejected():
    with (
        NTPResponder(0.200) as a,
        NTPResponder(0.200) as b,
        NTPResponder(1.200) as wrong,  # a falseticker, a second off the others
    ):
        cfg = load_config(
            None,
            env={
                "ALLNIGHTER_HOST_TOKEN": "timesync-test-token",
                "ALLNIGHTER_NTP_SERVERS": ",".join(f"127.0.0.1:{s.port}" for s in (a, b, wrong)),
            },
        )
        cfg.time.min_poll_s = 0.2
        srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()

        async def scrape() -> tuple[dict, str]:
            async with aiohttp.ClientSession() as http:
                for _ in range(50):
                    body = await (await http.get(srv.url + "/api/v1/time")).json()
                    if body["synced"]:
                        break
                    await asyncio.sleep(0.1)
                return body, await (await http.get(srv.url + "/metrics")).text()

        try:
            body, text = asyncio.run(scrape())
        finally:
            srv.stop()
    assert body["synced"], body
    got = samples(text)
    assert got[("allnighter_time_synced", ())] == 1
    assert got[("allnighter_time_offset_seconds", ())] == pytest.approx(body["offset_s"], abs=1e-3)
    assert got[("allnighter_time_drift_ppm", ())] == pytest.approx(body["drift_ppm"], abs=50)
    bound = got[("allnighter_time_error_bound_seconds", ())]
    # small once stepped onto the sources; ~0.2 s while still slewing there (the first
    # reading may come after time was handed out): finite either way
    assert body["error_bound_s"] is not None and math.isfinite(bound) and 0 < bound < 1
    by_name = {s["name"]: s for s in body["sources"]}
    for server, offset in ((a, 0.2), (b, 0.2), (wrong, 1.2)):
        name = f"ntp:127.0.0.1:{server.port}"
        src = (("source", name),)
        assert got[("allnighter_time_source_offset_seconds", src)] == pytest.approx(
            offset, abs=0.02
        )
        assert ("allnighter_time_source_weight", src) in got

        def count(outcome: str, name: str = name) -> float:
            labels = tuple(sorted({"source": name, "outcome": outcome}.items()))
            return got[("allnighter_time_source_readings_total", labels)]

        # the status and the gauges are read a moment apart: a poll may fall in between
        assert count("accepted") >= by_name[name]["accepted"]
        assert count("failed") == 0
        if server is wrong:
            assert count("accepted") == 0 and count("rejected") >= 1
            assert got[("allnighter_time_source_weight", src)] == 0
        else:
            assert count("accepted") >= 1 and count("rejected") == 0
