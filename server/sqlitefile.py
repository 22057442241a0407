"""SQLite as the show keeps its files (the logbook, the speech cache): the folder made, every
write its own transaction (autocommit), WAL with synchronous=NORMAL, so a commit is a write to
the operating system, not a disk flush, and a crash of the process keeps every row written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

IN_MEMORY = ":memory:"  # a file that keeps nothing past the process (tests, benches)


def open_db(path: str | Path) -> sqlite3.Connection:
    if str(path) != IN_MEMORY:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db
