"""One real server for the integration tests: SmolLM2, Piper and faster-whisper, loaded once."""

from __future__ import annotations

import pytest

from server.bench.inprocess import LiveServer
from server.config import load_config
from tests.conftest import TOKEN


@pytest.fixture(scope="session")
def show():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.stage.queue_size = 6
    cfg.chat.burst = 2
    srv = LiveServer(cfg).start(ready_timeout=600)
    yield srv
    srv.stop()
