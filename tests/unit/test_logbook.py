"""A restart, or a crash, at 2 a.m. loses nothing accepted: what no viewer had heard yet is
spoken after it, what was on the air is reported failed (with why), and the chat the host picks
from is still there."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import socketio

from server.bench.inprocess import LiveServer, free_port, request, say, until_final
from server.config import RoleConfig, load_config
from server.keys import LIVE
from server.loading import Models
from server.logbook import Logbook
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM
from tests.harness import wait_for

LINES = 6


def test_the_logbook_keeps_utterances_and_chat_and_trims_only_what_is_finished(tmp_path):
    book = Logbook(tmp_path / "logbook.sqlite", keep_utterances=3, keep_chat=2)
    for n in range(6):
        book.accepted(f"u{n}", "host", "verbatim", f"line {n}", 1000.0 + n)
    book.changed("u0", "speaking")
    for n in (1, 2, 3, 4):
        book.changed(f"u{n}", "done", {"id": f"u{n}", "state": "done"})
    for n in range(3):
        book.chat({"id": f"c{n}", "text": f"hello {n}"})
    book.close()
    book = Logbook(tmp_path / "logbook.sqlite", keep_utterances=3, keep_chat=2)
    # the unfinished survive any trim, in the order accepted; of the finished, the newest
    assert [(r["id"], r["state"]) for r in book.unfinished()] == [
        ("u0", "speaking"),
        ("u5", "queued"),
    ]
    assert [r["id"] for r in book.finished(10)] == ["u3", "u4"]
    assert [m["id"] for m in book.recent_chat(10)] == ["c1", "c2"]


def test_a_logbook_that_cannot_write_does_not_stop_the_show(tmp_path, caplog):
    book = Logbook(tmp_path / "logbook.sqlite")
    book._db.execute("DROP TABLE utterances")  # a write that fails, as on a broken disk
    book.accepted("u0", "host", "verbatim", "a line", 1000.0)
    assert book.errors == 1 and "the show goes on" in caplog.text


# A server in a process of its own, with test doubles for models (a slow tone voice: each line
# takes about a second), killed with SIGKILL while lines wait: nothing is written at its end.
SERVER = textwrap.dedent(
    """
    import sys, time
    from server.bench.inprocess import LiveServer
    from server.config import load_config
    from server.loading import Models
    from tests.fakes import ToneTTS, WordsLLM

    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": sys.argv[1]})
    cfg.logbook.path = sys.argv[2]
    LiveServer(cfg, Models(WordsLLM(), ToneTTS(word_s=0.3), None), int(sys.argv[3])).start()
    print("live", flush=True)
    time.sleep(3600)
    """
)


def test_a_server_killed_with_lines_queued_speaks_them_after_a_restart(tmp_path):
    path = str(tmp_path / "logbook.sqlite")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, TOKEN, path, str(port)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "live"
        # the process's server, as the host calls it
        before = SimpleNamespace(
            url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {TOKEN}"}
        )

        async def accept_and_chat() -> list[str]:
            ids = []
            for n in range(LINES):
                status, body = await say(before, f"line number {n} of the night")
                assert status == 202, body
                ids.append(body["utterance_id"])
            viewer = socketio.AsyncClient()
            await viewer.connect(before.url, transports=["websocket"])
            ack = await viewer.call("chat", {"text": "still up at two?"})
            assert ack["ok"], ack
            await viewer.disconnect()
            # the first line on the air, the second not yet: the server dies then
            for _ in range(200):
                snap = (await request(before, "GET", "/api/v1/utterances"))[1]
                every = {u["id"]: u for u in snap["recent"]}
                if every[ids[0]]["start_sample"] is not None:
                    break
                await asyncio.sleep(0.02)
            return ids

        ids = asyncio.run(accept_and_chat())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.logbook.path = path
    after = LiveServer(cfg, Models(WordsLLM(), ToneTTS(word_s=0.05, gap_s=0.02), None)).start()
    try:

        async def outcomes() -> list[dict]:
            return [await until_final(after, utt_id, timeout=60) for utt_id in ids]

        final = after.call(outcomes(), 90)
        chat = after.call(request(after, "GET", "/api/v1/show"), 30)[1]["chat"]
    finally:
        after.stop()
    states = [u["state"] for u in final]
    # nothing lost: each one spoken, or failed with its reason; failed only what was on the
    # air at the kill (the first line, perhaps the tail of none before it): the rest is spoken
    assert states[0] == "failed", states
    assert "stopped while it was being spoken" in final[0]["error"], final[0]
    assert states[1:] == ["done"] * (LINES - 1), states
    assert [m["text"] for m in chat] == ["still up at two?"]


def test_a_clean_stop_keeps_the_queue_for_the_next_start(tmp_path):
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.logbook.path = str(tmp_path / "logbook.sqlite")
    tts = ToneTTS(word_s=0.3)
    srv = LiveServer(cfg, Models(WordsLLM(), tts, None)).start()
    try:
        ids = [srv.call(say(srv, f"queued line {n}"))[1]["utterance_id"] for n in range(3)]
        stage = srv.app[LIVE].stage
        first = next(u for u in stage.history if u.id == ids[0])
        srv.call(wait_for(lambda: first.first_audio_at is not None))  # on the air
    finally:
        srv.stop()
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(word_s=0.05, gap_s=0.02), None)).start()
    try:
        first, *rest = [srv.call(until_final(srv, utt_id), 60) for utt_id in ids]
    finally:
        srv.stop()
    assert first["state"] == "failed" and "stopped while" in first["error"], first
    assert [u["state"] for u in rest] == ["done", "done"], rest


def test_a_scene_queued_at_a_restart_keeps_its_order_and_overlap(tmp_path):
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.logbook.path = str(tmp_path / "logbook.sqlite")
    cfg.roles = [RoleConfig(name="light", weight=1.0), RoleConfig(name="heavy", weight=8.0)]
    scene = {
        "lines": [
            {"role": "light", "text": "first of the scene"},
            {"role": "heavy", "text": "second of the scene", "overlap_ms": 200},
            {"role": "light", "text": "third of the scene"},
        ]
    }
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(word_s=0.3), None)).start()
    try:
        opener = srv.call(say(srv, "a line that holds the stage"))[1]["utterance_id"]
        status, body = srv.call(request(srv, "POST", "/api/v1/scene", scene))
        assert status == 202, body
        ids = body["utterance_ids"]
        stage = srv.app[LIVE].stage
        first = next(u for u in stage.history if u.id == opener)
        srv.call(wait_for(lambda: first.first_audio_at is not None))  # on the air
    finally:
        srv.stop()
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(word_s=0.05, gap_s=0.02), None)).start()
    try:
        lines = [srv.call(until_final(srv, utt_id), 60) for utt_id in ids]
    finally:
        srv.stop()
    assert [u["state"] for u in lines] == ["done"] * 3, lines
    # the heavy role's line still waits for the light one before it, as the scene says
    starts = [u["start_sample"] for u in lines]
    assert starts == sorted(starts), lines
    assert [u["overlap_ms"] for u in lines] == [0, 200, 0]
    assert lines[1]["after"] == ids[0] and lines[2]["after"] == ids[1]
