"""Streaming chat LLM: SmolLM2-135M-Instruct through transformers.

The model ships as a Q4_1 GGUF. transformers can read GGUF but only by dequantizing it,
which takes 10-40 s, and it refuses to `save_pretrained` a GGUF-loaded model. So the
first start converts it once into a plain safetensors folder in the cache (rebuilding
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, BatchEncoding, StoppingCriteria
from transformers.generation.streamers import BaseStreamer
from transformers.utils import logging as hf_logging

from models.catalogue import (
    cached_conversion,
    default_cache_dir,
    existing_file,
    packaged_smollm2_gguf,
)
from models.device import resolve, torch_device
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


class _QueueStreamer(BaseStreamer):
    """Hands generated token ids from the generate thread to the consumer, time-stamped."""

    def __init__(
        self, out: queue.Queue[Any], between_tokens: Callable[[], None] | None = None
    ) -> None:
        self._out = out
        self._between = between_tokens
        self._prompt_seen = False
        self._resumed: float | None = None  # when the model went on after the last token

    def put(self, value: torch.Tensor) -> None:
        now = time.perf_counter()
        if not self._prompt_seen:  # generate() first echoes the prompt ids: skip them
            self._prompt_seen = True
            return
        decode = None if self._resumed is None else now - self._resumed
        for token_id in value.reshape(-1).tolist():
            self._out.put((int(token_id), now, decode))
        # generate() hands a token to the streamer just before it computes the next one:
        # the caller may hold it here (see `between_tokens` in ChatLLM.stream)
        if self._between is not None:
            self._between()
        self._resumed = time.perf_counter()

    def end(self) -> None:
        pass  # the thread wrapper posts the end marker, also when generate() raises


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


def _cache_folder(gguf: Path, cache_dir: Path) -> Path:
    # Keyed by file name + size so a different GGUF gets its own converted copy.
    return cache_dir / "llm" / f"{gguf.stem}-{gguf.stat().st_size}"


def _convert(gguf: Path, target: Path, progress: Callable[[str], None]) -> None:
    """Dequantize the GGUF with transformers and write it as safetensors into `target`."""
    started = time.perf_counter()
    progress(f"converting {gguf.name} (one-off GGUF dequantization, 10-40 s) ...")
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    loaded = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32, local_files_only=True
    )
    # save_pretrained refuses a model that carries a GGUF quantization_config, so build
    # a plain model from the same config without it and copy the dequantized weights in.
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_model_name_or_path", None)
    config = type(loaded.config).from_dict(config_dict)
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict())
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(target)
    tokenizer.save_pretrained(target)
    progress(f"converted {gguf.name} in {time.perf_counter() - started:.1f} s")


def _is_converted(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


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
        folder = _cache_folder(gguf, cache_dir or default_cache_dir())
        # transformers' tqdm bars are noise in a server log; silence them while we load.
        bars_were_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            self.cache_path = cached_conversion(
                folder, lambda tmp: _convert(gguf, tmp, progress), _is_converted
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
    ) -> Iterator[TokenPiece]:
        """Yield the reply one token at a time (blocking generator).

        generate() runs in its own thread. It stops at the next token when `cancel` is
        set or when the consumer closes this generator (or drops it); either way the
        thread has ended when the generator finishes. Only the reply is yielded: no
        prompt echo, no special tokens. `between_tokens` runs on the generate thread after
        each token is handed out and before the next is computed; it may block briefly to
        give the CPU to more urgent work.
        """
        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        inputs = cast(BatchEncoding, encoded).to(self.device)  # return_dict: a BatchEncoding
        prefix = self._persona_ids(messages)
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
            streamer=_QueueStreamer(tokens, between_tokens),
            stopping_criteria=[_StopOnEvent(cancel, closed)],
        )

        def run() -> None:
            try:
                with self._generate_lock, torch.inference_mode():
                    past = self.prefixes.start(prefix, inputs["input_ids"])
                    self.model.generate(**kwargs, cache=past)
                tokens.put(_END)
            except BaseException as error:  # surfaced in the consumer's thread
                tokens.put(error)

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
            closed.set()
            thread.join()

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
