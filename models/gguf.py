"""The GGUF's one-off conversion: transformers reads a GGUF only by dequantizing it (10-40 s)
and will not save a model loaded that way, so the first start writes a plain safetensors copy
(the model rebuilt from its config, less the GGUF quantization_config) that every later start
loads in about a second. Imported by llm.py, which keeps the model hub offline first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def cache_folder(gguf: Path, cache_dir: Path) -> Path:
    # Keyed by file name + size so a different GGUF gets its own converted copy.
    return cache_dir / "llm" / f"{gguf.stem}-{gguf.stat().st_size}"


def convert(gguf: Path, target: Path, progress: Callable[[str], None]) -> None:
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


def is_converted(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))
