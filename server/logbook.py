"""The show's logbook: every accepted utterance and every viewer chat message, in embedded
SQLite, so that a restart, or a crash at 2 a.m., loses nothing that was accepted.

An utterance is written when it is accepted, before the host hears it was, and again at each
step: taken up by the pipeline (`speaking`), its first sound sent (`on_air`), then done,
interrupted or failed with its full record. After a restart the stage reads back those left
unfinished (server/show/stage.py, `resume`): what no viewer had heard yet is spoken from its
start; what was on the air is reported failed, cut off. A line that was in the works at two
restarts in a row is reported failed too: it may be what brings the server down, and spoken
again it could bring it down every night. The chat the host picks from, and the finished
utterances the host sees, are read back the same way.

SQLite in WAL mode with synchronous=NORMAL: a commit is a write to the operating system, not a
disk flush, so a crash of the process keeps every row written (a crash of the whole machine
may lose the last ones). Each write is a fraction of a millisecond on the event loop. The file
is trimmed to the newest `keep_*` rows so that it does not grow all night.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

from .sqlitefile import open_db

log = logging.getLogger(__name__)

TRIM_EVERY = 200  # writes between trims

_SCHEMA = """
CREATE TABLE IF NOT EXISTS utterances (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT UNIQUE NOT NULL,
    role TEXT NOT NULL,
    mode TEXT NOT NULL,
    text TEXT NOT NULL,
    state TEXT NOT NULL,
    accepted_ms REAL NOT NULL,
    restarts INTEGER NOT NULL DEFAULT 0,
    record TEXT,
    scene TEXT
);
CREATE INDEX IF NOT EXISTS utterances_state ON utterances (state);
CREATE TABLE IF NOT EXISTS chat (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    message TEXT NOT NULL
);
"""
UNFINISHED = ("queued", "speaking", "on_air")


class Logbook:
    def __init__(
        self, path: str | Path, keep_utterances: int = 10_000, keep_chat: int = 2_000
    ) -> None:
        self.path = str(path)
        self.keep_utterances, self.keep_chat = keep_utterances, keep_chat
        self._db = open_db(path)  # every write its own transaction, done when the call returns
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(utterances)")}
        if "scene" not in columns:  # a logbook from before scenes: its rows have none
            self._db.execute("ALTER TABLE utterances ADD COLUMN scene TEXT")
        self._writes = 0
        self.errors = 0  # writes that failed
        self.trim()

    # ---- utterances ----------------------------------------------------------------------
    def accepted(
        self,
        utt_id: str,
        role: str,
        mode: str,
        text: str,
        accepted_ms: float,
        scene: dict[str, Any] | None = None,
    ) -> None:
        """`scene`: a scene's line's place in it (the line it follows, its overlap, the turn
        it answers), for its order after a restart."""
        scene_json = None if scene is None else json.dumps(scene, allow_nan=False)
        self._write(
            "INSERT OR IGNORE INTO utterances (id, role, mode, text, state, accepted_ms, scene)"
            " VALUES (?, ?, ?, ?, 'queued', ?, ?)",
            (utt_id, role, mode, text, accepted_ms, scene_json),
        )

    def changed(self, utt_id: str, state: str, record: dict[str, Any] | None = None) -> None:
        """A new state; with the full record (the API's JSON of it) once it is final."""
        record_json = None if record is None else json.dumps(record, allow_nan=False)
        self._write(
            "UPDATE utterances SET state = ?, record = COALESCE(?, record) WHERE id = ?",
            (state, record_json, utt_id),
        )

    def requeued(self, utt_id: str) -> None:
        """Taken up again after a restart, before anyone heard it."""
        self._write(
            "UPDATE utterances SET state = 'queued', restarts = restarts + 1 WHERE id = ?",
            (utt_id,),
        )

    def unfinished(self) -> list[dict[str, Any]]:
        """Utterances left unfinished, in the order they were accepted: {id, role, mode, text,
        state, accepted_ms, restarts (how many restarts found it unfinished before), scene
        (a scene's line: {after, overlap_ms, reply_to}; else None)}."""
        rows = self._db.execute(
            "SELECT id, role, mode, text, state, accepted_ms, restarts, scene FROM utterances"
            f" WHERE state IN ({', '.join('?' * len(UNFINISHED))}) ORDER BY seq",
            UNFINISHED,
        ).fetchall()
        keys = ("id", "role", "mode", "text", "state", "accepted_ms", "restarts", "scene")
        out = [dict(zip(keys, row, strict=True)) for row in rows]
        for row in out:
            row["scene"] = json.loads(row["scene"]) if row["scene"] else None
        return out

    def finished(self, n: int) -> list[dict[str, Any]]:
        """The records of the last `n` finished utterances, oldest first."""
        rows = self._db.execute(
            "SELECT record FROM utterances WHERE record IS NOT NULL ORDER BY seq DESC LIMIT ?",
            (n,),
        ).fetchall()
        return [json.loads(record) for (record,) in reversed(rows)]

    # ---- chat ----------------------------------------------------------------------------
    def chat(self, message: dict[str, Any]) -> None:
        self._write("INSERT INTO chat (message) VALUES (?)", (json.dumps(message),))

    def recent_chat(self, n: int) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT message FROM chat ORDER BY seq DESC LIMIT ?", (n,))
        return [json.loads(message) for (message,) in reversed(rows.fetchall())]

    # ---- upkeep --------------------------------------------------------------------------
    def size(self) -> int:
        """How many utterances it holds."""
        return self._db.execute("SELECT COUNT(*) FROM utterances").fetchone()[0]

    def trim(self) -> None:
        """Keep the newest rows; an unfinished utterance is never trimmed."""
        self._db.execute(
            f"DELETE FROM utterances WHERE state NOT IN ({', '.join('?' * len(UNFINISHED))})"
            " AND seq <= (SELECT COALESCE(MAX(seq), 0) FROM utterances) - ?",
            (*UNFINISHED, self.keep_utterances),
        )
        self._db.execute(
            "DELETE FROM chat WHERE seq <= (SELECT COALESCE(MAX(seq), 0) FROM chat) - ?",
            (self.keep_chat,),
        )

    def close(self) -> None:
        self._db.close()

    def _write(self, sql: str, args: tuple) -> None:
        """A failing disk must not stop the show: the error is logged and counted, and the
        show goes on with what it holds in memory."""
        try:
            self._db.execute(sql, args)
            self._writes += 1
            if self._writes % TRIM_EVERY == 0:
                self.trim()
        except sqlite3.Error as exc:
            self.errors += 1
            log.error("logbook %s: %s (the show goes on; this row is not kept)", self.path, exc)
