"""Device choice for the three runtimes (torch, CTranslate2, onnxruntime).

Each runtime detects CUDA on its own: a CPU-only torch wheel can sit next to a CUDA
build of CTranslate2, so one global "is there a GPU" answer would be wrong.
Adapters take device="auto" | "cpu" | "cuda"; "auto" asks the runtime in question.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

DEVICES = ("auto", "cpu", "cuda")


def lower_priority(step: int) -> None:
    """This thread, and the threads it starts from now on, `step` nice values lower than it ran
    (Linux keeps nice values per thread; elsewhere nothing changes). Added to what the thread
    inherited, so a server run under `nice` keeps the same order among its threads."""
    with contextlib.suppress(OSError, AttributeError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + step))


def torch_device() -> str:
    """ "cuda" when torch sees a GPU, else "cpu"."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def ct2_device() -> str:
    """ "cuda" when CTranslate2 (faster-whisper) was built with CUDA and sees a GPU."""
    import ctranslate2

    return "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"


def onnx_cuda() -> bool:
    """True when onnxruntime (Piper) has the CUDA execution provider."""
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


def resolve(device: str, auto: Callable[[], str]) -> str:
    """Turn an "auto" | "cpu" | "cuda" setting into "cpu" or "cuda"."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    return auto() if device == "auto" else device
