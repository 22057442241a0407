"""First audio against a peer: Allnighter's 20 verbatim lines beside pipecat's Piper path.

Allnighter is measured as shipped (each line opened with its first words, server/show/opening.py)
and with its opening off (Piper's whole first sentence first: the baseline of this run), at the
server (its first voiced frame leaving for the viewers) and at a WebRTC viewer (aiortc, in this
process, its own loop: the first voiced frame it decoded), with where the time went and the
word error rate the ASR feedback heard. pipecat runs in a virtual environment of its own
(scripts/setup-pipecat.sh; ALLNIGHTER_PIPECAT_PYTHON names another) with the same Piper voice
and lines (pipecat_peer.py), timed to its first voiced sample: its first frame, plus the lead-in
silence that frame opens with; and at an aiortc viewer of its own WebRTC transport where
pipecat-ai[webrtc] is installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from models.catalogue import packaged_piper_voice
from server.media.broadcast import is_voiced
from server.show.opening import opening_words

from ..keys import CONFIG, LIVE
from .inprocess import LiveServer
from .table import mean, median, pct, render
from .viewer import PythonViewer

ROOT = Path(__file__).resolve().parents[2]
PIPECAT = "pipecat-ai 1.14 (PiperTTSService, in process)"
VARIANTS = {"Allnighter, opening (as shipped)": True, "Allnighter, whole first sentence": False}


def peer_python() -> Path | None:
    """The Python of pipecat's virtual environment, where there is one."""
    named = os.environ.get("ALLNIGHTER_PIPECAT_PYTHON")
    path = Path(named) if named else ROOT / ".venv-pipecat" / "bin" / "python"
    return path if path.exists() else None


class ListeningViewer:
    """A WebRTC viewer on a loop of its own thread: when it decoded each sample's frame."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.viewer = PythonViewer(url, listen_socket=False)
        self._call(self.viewer.connect())

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def heard(self, sample: int, timeout: float = 5.0) -> float | None:
        """When (monotonic) the first voiced frame at or after `sample` was decoded here."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for f in list(self.viewer.frames):
                if f.sample + len(f.pcm) > sample and is_voiced(f.pcm):
                    return f.arrived
            time.sleep(0.05)
        return None

    def close(self) -> None:
        self._call(self.viewer.close())
        self.loop.call_soon_threadsafe(self.loop.stop)


def measure_allnighter(srv: LiveServer, lines: list[str], settle, say_and_wait) -> dict:
    """Each line spoken with the opening on, then off (one line at a time, turn about)."""
    stage, cfg = srv.app[LIVE].stage, srv.app[CONFIG].stage
    assert stage is not None  # the server is live
    feedback = srv.app[LIVE].feedback
    viewer = ListeningViewer(srv.url)
    got: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    try:
        for text in lines:
            for name, opening in VARIANTS.items():
                cfg.opening = opening
                settle(srv)
                record = asyncio.run(say_and_wait(srv, text, "verbatim"))
                utt = next(u for u in stage.history if u.id == record["id"])
                heard = viewer.heard(record["start_sample"] or 0)
                settle(srv)  # the ASR feedback has heard its phrases
                got[name].append(
                    {
                        "server": record["text_to_first_audio_ms"],
                        "viewer": None if heard is None else (heard - utt.accepted_at) * 1000,
                        "steps": record["first_audio_steps_ms"],
                        "split": opening and opening_words(text) is not None,
                        "wer": _wer(feedback, record["id"]),
                    }
                )
            print(f"peer comparison: {text!r}", flush=True)
    finally:
        cfg.opening = True
        viewer.close()
    return got


def _wer(feedback: Any, utterance_id: str) -> float | None:
    """The utterance's word error rate as the ASR feedback heard it, word-weighted over its
    phrases (None with the feedback off)."""
    if feedback is None:
        return None
    checks = [c for c in feedback.results if c.utterance_id == utterance_id]
    words = sum(len(c.text.split()) for c in checks)
    return sum(c.wer * len(c.text.split()) for c in checks) / words if words else None


def measure_pipecat(lines: list[str]) -> list[dict] | str:
    """pipecat's figures for `lines`, or why there are none."""
    python = peer_python()
    if python is None:
        return "not installed (scripts/setup-pipecat.sh installs it into .venv-pipecat)"
    voice = packaged_piper_voice()
    job: dict[str, Any] = {
        "voice_dir": str(voice.parent),
        "voice": voice.name.removesuffix(".onnx"),
    }
    job |= {"lines": lines, "sample_rate": 48_000}
    done = subprocess.run(
        [str(python), str(Path(__file__).with_name("pipecat_peer.py"))],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        return f"failed: {done.stderr.strip().splitlines()[-1:]}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def first_audio_tables(ours: dict, peer: list[dict] | str) -> str:
    rows = []
    for name, got in ours.items():
        for where in ("server", "viewer"):
            values = [g[where] for g in got if g[where] is not None]
            rows.append([name, where, len(values), median(values), pct(values, 95)])
    if isinstance(peer, list):
        values = [p["first_voiced_ms"] for p in peer]
        rows.append([PIPECAT, "server", len(values), median(values), pct(values, 95)])
        # at an aiortc viewer of its own WebRTC transport, where pipecat-ai[webrtc] is installed
        heard = [p["viewer_ms"] for p in peer if p.get("viewer_ms") is not None]
        if heard:
            rows.append([PIPECAT, "viewer", len(heard), median(heard), pct(heard, 95)])
    header = ["path", "measured at", "lines", "p50", "p95"]
    table = render(
        "bench latency: text to first voiced audio (ms), the same lines and voice in one run",
        header,
        rows,
    )
    notes = [table, ""]
    shipped = ours[next(iter(VARIANTS))]
    whole = ours[list(VARIANTS)[1]]
    ratios = [("whole first sentence", {w: [g[w] for g in whole] for w in ("server", "viewer")})]
    if isinstance(peer, list):
        theirs: dict[str, list[Any]] = {"server": [p["first_voiced_ms"] for p in peer]}
        theirs["viewer"] = [p.get("viewer_ms") for p in peer]
        ratios.insert(0, ("pipecat", theirs))
        lead = median([p["lead_in_ms"] for p in peer])
        notes.append(f"pipecat's first frames open with {lead:.0f} ms of Piper's lead-in (p50)")
    else:
        notes.append(f"{PIPECAT}: {peer}")
    for where in ("server", "viewer"):
        ours_ms = [g[where] for g in shipped if g[where] is not None]
        for name, figures in ratios:
            their_ms = [t for t in figures.get(where, []) if t is not None]
            if ours_ms and their_ms:
                notes.append(
                    f"opening (as shipped) / {name}, at the {where}: p50 "
                    f"{median(ours_ms) / median(their_ms):.2f}, "
                    f"p95 {pct(ours_ms, 95) / pct(their_ms, 95):.2f}"
                )
    return "\n".join([*notes, "", steps_table(ours), "", wer_line(ours)])


def steps_table(ours: dict) -> str:
    """Where text-to-first-audio went: medians of each step (ms)."""
    names = ("to_synthesis", "synthesis", "to_send")
    rows = []
    for name, got in ours.items():
        steps = [g["steps"] for g in got if g["steps"]]
        viewer = [g["viewer"] - g["server"] for g in got if g["viewer"] is not None]
        rows.append([name] + [median([s[n] for s in steps]) for n in names] + [median(viewer)])
    header = ["path", "accepted → TTS", "TTS first chunk", "placed and sent", "sent → viewer"]
    return render("bench latency: where first audio's time goes (ms, medians)", header, rows)


def wer_line(ours: dict) -> str:
    parts = []
    for name, got in ours.items():
        wers = [g["wer"] for g in got if g["wer"] is not None]
        split = sum(g["split"] for g in got)
        parts.append(f"{name}: mean {mean(wers):.3f} over {len(wers)} lines ({split} opened)")
    return "word error rate as the ASR feedback heard it: " + "; ".join(parts)
