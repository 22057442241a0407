"""Model adapters: the LLM (transformers), the TTS (Piper) and the ASR (faster-whisper)."""

import os

# libgomp's idle worker threads spin-wait for a long time after each parallel region. When
# the LLM pauses between tokens so Piper can synthesize the next phrase, that spinning takes
# the cores Piper needs (measured here: a phrase 50 → 80 ms). A short spin keeps the LLM at
# full speed (50 tok/s either way) and hands the cores back. Set before torch loads libgomp.
os.environ.setdefault("GOMP_SPINCOUNT", "10000")
