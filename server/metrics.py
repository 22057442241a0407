"""Prometheus metrics of one server (own registry, so several servers can share a process)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from .anomalies import Anomalies
from .collectors import BatchHistogram, ClockCollector

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10)
FINE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1)
# picture − sound (ms): the edges of ATSC IS-191 (+45/−15 for sound behind/ahead, here the
# picture's view: −45 … +15) and EBU R37 (−60 … +40) are bucket edges
LIPSYNC_BUCKETS = (-100, -60, -45, -30, -15, -10, -5, 0, 5, 10, 15, 30, 40, 60, 100)
# one utterance's offsets between modalities (ms): picture − heard is lip-sync (tens of ms,
# ATSC's −45/+15 are edges), heard − audio a viewer's playout delay and audio − text the
# pipeline's latency (hundreds of ms, seconds when the queue or LLM is slow)
CROSS_MODAL_BUCKETS = (
    -500, -250, -100, -45, -15, 0, 15, 45, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000
)  # fmt: skip


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.text_to_first_audio = Histogram(
            "allnighter_text_to_first_audio_seconds",
            "Accepted utterance to its first non-silent frame leaving for viewers",
            ["mode"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.llm_ttft = Histogram(
            "allnighter_llm_time_to_first_token_seconds",
            "LLM time to first token",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.tts_ttfa = Histogram(
            "allnighter_tts_time_to_first_audio_seconds",
            "Piper call to its first audio chunk",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.token_interval = Histogram(
            "allnighter_llm_token_interval_seconds",
            "Decode time between consecutive tokens",
            buckets=FINE_BUCKETS,
            registry=r,
        )
        self.token_alignment_violations = Counter(
            "allnighter_token_alignment_violations",
            "Tokens whose decode time exceeded N audio frame steps (N=3, 10 ms frames)",
            registry=r,
        )
        self.viewers = Gauge("allnighter_viewers", "Connected WebRTC viewers", registry=r)
        self.queue_depth = Gauge("allnighter_queue_depth", "Utterances waiting", registry=r)
        self.unknown_phonemes = Counter(
            "allnighter_unknown_phonemes",
            "Phonemes missing from the viseme table",
            registry=r,
        )
        self.utterances = Counter(
            "allnighter_utterances",
            "Utterances by outcome",
            ["outcome"],
            registry=r,
        )
        # against the outcomes: accepted = done + interrupted + failed + those still queued or
        # speaking; any other difference is an utterance lost
        self.accepted = Counter(
            "allnighter_utterances_accepted",
            "Utterances accepted (and those taken up again after a restart)",
            registry=r,
        )
        self.rejected = Counter(
            "allnighter_rejected_requests",
            "Refused input by reason",
            ["reason"],
            registry=r,
        )
        self.task_restarts = Counter(
            "allnighter_task_restarts",
            "Long-running tasks restarted after they failed (broadcast, stage)",
            ["task"],
            registry=r,
        )
        self.frames_sent = Gauge("allnighter_frames_sent", "Broadcast frames sent", registry=r)
        self.frames_late = Gauge(
            "allnighter_frames_late",
            "Broadcast frames sent two or more slots late",
            registry=r,
        )
        self.loop_lag = Histogram(
            "allnighter_event_loop_lag_seconds",
            "Event loop scheduling lag",
            buckets=FINE_BUCKETS,
            registry=r,
        )
        self.gc_pause = Histogram(
            "allnighter_gc_pause_seconds",
            "Cyclic garbage collections, by generation: every thread waits while one runs",
            ["generation"],
            buckets=FINE_BUCKETS,
            registry=r,
        )
        self.lipsync = BatchHistogram(
            "allnighter_lipsync_offset_ms",
            "Picture minus sound at each viseme onset drawn, as viewers' pages measure it",
            LIPSYNC_BUCKETS,
            registry=r,
        )
        self.viewer_lipsync = BatchHistogram(
            "allnighter_viewer_lipsync_offset_ms",
            "Picture minus sound at each viseme onset drawn, per viewer (socket id)",
            LIPSYNC_BUCKETS,
            ["viewer"],
            registry=r,
        )
        self.role_lipsync = BatchHistogram(
            "allnighter_role_lipsync_offset_ms",
            "Picture minus sound at each viseme onset drawn, by the role whose mouth it is",
            LIPSYNC_BUCKETS,
            ["role"],
            registry=r,
        )
        self.frame_jitter = Histogram(
            "allnighter_frame_jitter_ms",
            "Viewers' animation frame jitter (p99 of each report)",
            buckets=(1, 2, 4, 8, 16, 33, 50, 100, 250),
            registry=r,
        )
        self.cross_modal = Histogram(
            "allnighter_cross_modal_offset_ms",
            "Per utterance: audio minus text once, heard minus audio and picture minus heard per"
            " viewer (fused clock)",
            ["pair"],
            buckets=CROSS_MODAL_BUCKETS,
            registry=r,
        )
        self.asr_wer = Histogram(
            "allnighter_asr_word_error_rate",
            "Words heard by ASR vs phrase text",
            buckets=(0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2),
            registry=r,
        )
        self.asr_timing = Histogram(
            "allnighter_asr_timing_offset_seconds",
            "Heard minus planned word start time (median per phrase)",
            buckets=(-0.2, -0.1, -0.05, -0.02, -0.01, 0, 0.01, 0.02, 0.05, 0.1, 0.2),
            registry=r,
        )
        self.asr_skipped = Counter(
            "allnighter_asr_phrases_skipped",
            "Phrases not checked by ASR (busy)",
            registry=r,
        )
        self.asr_flagged = Counter(
            "allnighter_asr_phrases_flagged",
            "Phrases whose words heard by ASR differ from their text beyond the flag WER",
            registry=r,
        )
        self.asr_drift = Gauge(
            "allnighter_asr_drift_seconds",
            "Heard minus planned word start, less the same on Piper's own sound of the phrase"
            " (median of recent phrases)",
            registry=r,
        )
        self.viseme_correction = Gauge(
            "allnighter_viseme_correction_seconds",
            "How much later than Piper's alignments visemes are planned (ASR feedback)",
            registry=r,
        )
        self.process_rss = Gauge(
            "allnighter_process_resident_bytes", "The server's resident memory", registry=r
        )
        self.gpu_memory = Gauge(
            "allnighter_gpu_memory_bytes",
            "The CUDA caching allocator's memory (allocated, reserved)",
            ["kind"],
            registry=r,
        )
        self.gpu_fragmentation = Gauge(
            "allnighter_gpu_fragmentation",
            "1 - largest free block / total free in the CUDA allocator (healthy under 0.35)",
            registry=r,
        )
        self.anomalies_raised = Counter(
            "allnighter_anomalies",
            "Alerts: a latency over 1.8x its rolling p99 and 200 ms, or memory over its line",
            ["series"],
            registry=r,
        )
        self.speech_cache = Counter(
            "allnighter_speech_cache",
            "Speech cache lookups and makes by outcome: hit, stale, miss, made, failed",
            ["outcome"],
            registry=r,
        )
        self.fallback_level = Gauge(
            "allnighter_fallback_level", "The night's fallback level (0-3)", registry=r
        )
        self.fallback_switches = Counter(
            "allnighter_fallback_switches",
            "Changes of the fallback level, by the level reached",
            ["level"],
            registry=r,
        )
        self.compression = Histogram(
            "allnighter_compression_ratio",
            "At fallback level 1 and above: a prompt's words kept, over its words",
            buckets=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
            registry=r,
        )
        # every latency the night watches goes through here as well as to its histogram
        self.anomalies = Anomalies()
        self.anomalies.listeners.append(
            lambda alert: self.anomalies_raised.labels(alert.series).inc()
        )

    def watch_clock(self, clock: Any) -> None:
        """Export the fused clock's status (GET /api/v1/time) as gauges, read at each scrape."""
        self.registry.register(ClockCollector(clock))
