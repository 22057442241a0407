"""Shared fixtures: servers run in-process on 127.0.0.1 in their own loop thread."""

from __future__ import annotations

import pytest

from server.bench.inprocess import LiveServer
from server.config import load_config
from server.loading import Models
from tests.fakes import ToneTTS, WordsLLM

TOKEN = "test-host-token-0123"


@pytest.fixture(scope="module")
def tone_server():
    """A server whose models are test doubles (tones, fixed replies): for transport tests."""
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.stage.queue_size = 4
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()
    yield srv
    srv.stop()
