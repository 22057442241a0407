"""One real server for the integration tests: SmolLM2, Piper and faster-whisper, loaded once."""

from __future__ import annotations

import pytest

from server.bench.inprocess import LiveServer
from server.config import RoleConfig, load_config
from tests.conftest import TOKEN


@pytest.fixture(scope="session")
def show():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.stage.queue_size = 6
    # the embedded cast, and a third voice for the scenes (tests/integration/test_cast.py)
    cfg.roles.append(RoleConfig(name="lyra", pitch=1.25, persona="You are Lyra, a poet."))
    cfg.chat.burst = 2
    srv = LiveServer(cfg).start(ready_timeout=600)
    yield srv
    srv.stop()
