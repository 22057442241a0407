"""Streaming chat LLM: SmolLM2-135M-Instruct through transformers.

The model ships as a Q4_1 GGUF. transformers can read GGUF but only by dequantizing it,
which takes 10-40 s, and it refuses to `save_pretrained` a GGUF-loaded model. So the
first start converts it once (gguf.py) into a plain safetensors folder in the cache (rebuilding
the model from its config, minus the GGUF quantization_config) and every later start
loads that folder in about a second.

The cache is stored in float32: the dequantized Q4_1 values are not exactly
representable in bfloat16, and float32 keeps the cached model bit-identical to the GGUF
one (same logits) at 0.5 GB of disk; CPUs compute in float32 by default anyway.

Blocking API, meant to be driven from an executor thread; no asyncio here.
"""

from __future__ import annotations

import os

# Never reach for a model hub: everything is local. Set before transformers (and with
# it huggingface_hub) is imported, since the hub library reads this at import time.
os.environ["HF_HUB_OFFLINE"] = "1"

import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, BatchEncoding, StoppingCriteria
from transformers.utils import logging as hf_logging

from models.batching import RowStreamer, middle_padded
from models.catalogue import (
    cached_conversion,
    default_cache_dir,
    existing_file,
    packaged_smollm2_gguf,
)
from models.device import resolve, torch_device
from models.gguf import cache_folder, convert, is_converted
from models.prefixcache import PrefixCache
from models.protocols import DEFAULT_MAX_NEW_TOKENS, LLM, Messages, TokenPiece

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def fast_dtype(device: str) -> str:
    """bfloat16 where the hardware computes it natively (CUDA, or CPUs with AVX512-BF16 or
    AMX: about twice the tokens per second of float32 here), float32 elsewhere."""
    if device == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "float32"
    return "bfloat16" if ("avx512_bf16" in flags or "amx_bf16" in flags) else "float32"


def _stderr(message: str) -> None:
    print(f"[llm] {message}", file=sys.stderr, flush=True)


class _StopOnEvent(StoppingCriteria):
    """Stops generate() at the next token once any of the events is set."""

    def __init__(self, *events: threading.Event) -> None:
        self._events = events

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        stop = any(e.is_set() for e in self._events)
        shape = (input_ids.shape[0],)
        return cast(
            torch.BoolTensor, torch.full(shape, stop, dtype=torch.bool, device=input_ids.device)
        )


_END = object()


class ChatLLM(LLM):
    """A local chat model that streams its reply token by token."""

    def __init__(
        self,
        gguf_path: str | Path | None = None,
        cache_dir: Path | None = None,
        device: str = "auto",
        progress: Callable[[str], None] = _stderr,
        threads: int | None = None,
        dtype: str = "float32",
    ) -> None:
        """Convert the GGUF once (if not cached yet), then load the safetensors copy.

        `threads` caps torch's intra-op threads; torch's setting is process-wide, so this
        affects every torch user in the process. `dtype` is the compute dtype: float32
        is the safe default; bfloat16 is about 2x faster on CPUs with AVX512-BF16/AMX.
        """
        if dtype not in (*_DTYPES, "auto"):
            raise ValueError(f"dtype must be auto or one of {sorted(_DTYPES)}, not {dtype!r}")
        gguf = (
            packaged_smollm2_gguf()
            if gguf_path is None
            else existing_file(gguf_path, "LLM GGUF file")
        )
        self.device = resolve(device, torch_device)
        dtype = fast_dtype(self.device) if dtype == "auto" else dtype
        self.dtype = dtype
        if threads is not None:
            torch.set_num_threads(threads)
        folder = cache_folder(gguf, cache_dir or default_cache_dir())
        # transformers' tqdm bars are noise in a server log; silence them while we load.
        bars_were_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            self.cache_path = cached_conversion(
                folder, lambda tmp: convert(gguf, tmp, progress), is_converted
            )
            started = time.perf_counter()
            progress(f"loading {folder.name} on {self.device} ...")
            self.tokenizer = AutoTokenizer.from_pretrained(self.cache_path, local_files_only=True)
            self.model = AutoModelForCausalLM.from_pretrained(
                self.cache_path, dtype=_DTYPES[dtype], local_files_only=True
            )
        finally:
            if bars_were_on:
                hf_logging.enable_progress_bar()
        self.model.to(self.device).eval()  # type: ignore[arg-type]  # transformers' decorated to()
        progress(f"loaded {folder.name} in {time.perf_counter() - started:.1f} s")

        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            eos_ids.add(self.tokenizer.eos_token_id)
        self._eos_ids = sorted(eos_ids)
        pad = self.tokenizer.pad_token_id
        self._pad_id = pad if pad is not None else self._eos_ids[0]
        self._special_ids = set(self.tokenizer.all_special_ids)
        # One generation at a time: two interleaved ones would each run at half speed,
        # and a cancelled one may still be finishing its last token.
        self._generate_lock = threading.Lock()
        self.last_thread: threading.Thread | None = None
        self.prefixes = PrefixCache(self.model)  # each persona's keys and values, reused

    def chat_messages(self, persona: str, prompt: str) -> Messages:
        """System persona + user prompt, in the shape `stream` takes."""
        return [{"role": "system", "content": persona}, {"role": "user", "content": prompt}]

    def stream(
        self,
        messages: Messages,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        temperature: float = 0.7,
        cancel: threading.Event | None = None,
        between_tokens: Callable[[], None] | None = None,
        also: Sequence[Messages] = (),
        kept: Callable[[list[str | None]], None] | None = None,
    ) -> Iterator[TokenPiece]:
        """Yield the reply one token at a time (blocking generator).

        generate() runs in its own thread. It stops at the next token when `cancel` is
        set or when the consumer closes this generator (or drops it); either way the
        thread has ended when the generator finishes. Only the reply is yielded: no
        prompt echo, no special tokens. `between_tokens` runs on the generate thread after
        each token is handed out and before the next is computed; it may block briefly to
        give the CPU to more urgent work.

        `also`: prompts of the same persona, answered beside this one in one generation
        (batching.py) where their tokens allow; `kept(replies)` gets theirs when it ends
        (None for one cut short). The generator finishes with this reply; the thread goes
        on, holding the model, until the others are whole.
        """
        prefix = self._persona_ids(messages)
        inputs = self._inputs(messages, prefix, also)
        rows = inputs["input_ids"].shape[0]
        cancel = cancel or threading.Event()
        closed = threading.Event()
        tokens: queue.Queue[Any] = queue.Queue()
        sampling: dict[str, Any] = (
            {"do_sample": True, "temperature": temperature, "top_p": 0.9}
            if temperature > 0
            else {"do_sample": False}
        )
        kwargs = dict(
            **inputs,
            **sampling,
            max_new_tokens=max_new_tokens,
            repetition_penalty=1.1,
            pad_token_id=self._pad_id,
            eos_token_id=self._eos_ids,
            streamer=(streamer := RowStreamer(tokens, _END, self._eos_ids, rows, between_tokens)),
            stopping_criteria=[_StopOnEvent(cancel, closed)],
        )

        def run() -> None:
            replies: list[str | None] = [None] * len(also)
            try:
                with self._generate_lock, torch.inference_mode():
                    past = self.prefixes.start(prefix, inputs["input_ids"][:1])
                    if past is not None and rows > 1:
                        past.batch_repeat_interleave(rows)  # the persona, once a row
                    self.model.generate(**kwargs, cache=past)
                    cut = cancel.is_set() or closed.is_set()  # stopped, not ended
                    replies = self._replies(streamer, len(also), cut)
                tokens.put(_END)
            except BaseException as error:  # surfaced in the consumer's thread
                tokens.put(error)
            finally:
                if kept is not None and also:
                    kept(replies)

        thread = threading.Thread(target=run, name="llm-generate", daemon=True)
        self.last_thread = thread
        thread.start()
        ids: list[int] = []
        emitted = ""
        index = 0
        try:
            while not cancel.is_set():
                item = tokens.get()
                if item is _END:
                    break
                if isinstance(item, BaseException):
                    raise item
                token_id, produced_at, decode_s = item
                if token_id in self._special_ids:
                    continue  # e.g. <|im_end|>: not part of the reply
                ids.append(token_id)
                # Decode the whole reply so far, so multi-byte characters split across
                # tokens come out whole; hold back a trailing incomplete one (U+FFFD).
                text = cast(str, self.tokenizer.decode(ids, clean_up_tokenization_spaces=False))
                piece = ""
                if not text.endswith("\ufffd"):
                    piece, emitted = text[len(emitted) :], text
                if cancel.is_set():
                    break
                yield TokenPiece(piece, index, produced_at, decode_s)
                index += 1
        finally:
            if not streamer.ended[0] or cancel.is_set():  # left early: every row stops
                closed.set()
            if rows == 1 or closed.is_set():  # else it goes on with the others' replies
                thread.join()

    def _inputs(self, messages: Messages, prefix: list[int], also: Sequence[Messages]) -> Any:
        """The prompt's ids and mask: with `also`, a row each (batching.py) where all start
        with the persona's tokens; else the prompt's alone."""

        def ids(m: Messages) -> list[int]:
            rendered = self.tokenizer.apply_chat_template(
                m, add_generation_prompt=True, return_dict=True
            )
            return list(cast(BatchEncoding, rendered)["input_ids"])

        if also:
            rows = middle_padded(prefix, [ids(m) for m in (messages, *also)])
            if rows is not None:
                return {
                    "input_ids": rows[0].to(self.device),
                    "attention_mask": rows[1].to(self.device),
                }
        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        return cast(BatchEncoding, encoded).to(self.device)  # return_dict: a BatchEncoding

    def _replies(self, streamer: RowStreamer, n: int, cut: bool) -> list[str | None]:
        """The rows past the first, decoded; None for one cut short (or never a row)."""
        out: list[str | None] = []
        for row in range(1, n + 1):
            if row >= len(streamer.kept) or (cut and not streamer.ended[row]):
                out.append(None)
                continue
            ids = [t for t in streamer.kept[row] if t not in self._special_ids]
            out.append(cast(str, self.tokenizer.decode(ids, clean_up_tokenization_spaces=False)))
        return out

    def _persona_ids(self, messages: Messages) -> list[int]:
        """The tokens of the prompt's system message (its persona), as the template renders
        them; none where it has none."""
        if not messages or messages[0]["role"] != "system":
            return []
        rendered = self.tokenizer.apply_chat_template(messages[:1], return_dict=True)
        return list(cast(BatchEncoding, rendered)["input_ids"])

    def warm_up(self) -> None:
        """Run one short generation so the first real request does not pay for setup."""
        for _ in self.stream(self.chat_messages("You are terse.", "Hi"), max_new_tokens=4):
            pass
