"""ChatLLM against the real packaged SmolLM2 (converted once into a temporary cache)."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from models.catalogue import ModelNotFound
from models.llm import ChatLLM, TokenPiece
from models.prefixcache import NoPrefixes

PERSONA = "You are Nova, a cheerful late-night streamer. Answer in one or two short sentences."
LONG_PROMPT = "Tell me a long, detailed story about a cat who runs a night bakery."


def generate_threads() -> list[threading.Thread]:
    """Live generate threads (counted by name: tqdm's monitor thread may come and go)."""
    return [t for t in threading.enumerate() if t.name == "llm-generate" and t.is_alive()]


@contextlib.contextmanager
def passes(llm: ChatLLM, of: Callable[[torch.Tensor], int]) -> Iterator[list[int]]:
    """`of(input_ids)` for each forward pass of the model while inside."""
    seen: list[int] = []

    def count(module: object, args: tuple, kwargs: dict) -> None:
        seen.append(of(kwargs["input_ids"]))

    hook = llm.model.register_forward_pre_hook(count, with_kwargs=True)
    try:
        yield seen
    finally:
        hook.remove()


class Loaded:
    def __init__(self, llm: ChatLLM, cache: Path, seconds: float, messages: list[str]) -> None:
        self.llm, self.cache, self.seconds, self.messages = llm, cache, seconds, messages


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    cache = tmp_path_factory.mktemp("llm-cache")
    messages: list[str] = []
    started = time.perf_counter()
    llm = ChatLLM(cache_dir=cache, progress=messages.append, device="cpu")
    yield Loaded(llm, cache, time.perf_counter() - started, messages)
    shutil.rmtree(cache, ignore_errors=True)  # 0.5 GB; pytest would keep 3 runs of it


@pytest.mark.models
def test_conversion_writes_a_safetensors_cache(loaded: Loaded) -> None:
    assert any(m.startswith("converting") for m in loaded.messages)
    folders = list((loaded.cache / "llm").iterdir())
    assert len(folders) == 1  # no temporary folder left behind
    assert folders[0] == loaded.llm.cache_path
    assert list(folders[0].glob("*.safetensors"))
    assert (folders[0] / "config.json").is_file()
    assert (folders[0] / "tokenizer.json").is_file()
    # keyed by the source file's name and size
    assert folders[0].name.startswith("SmolLM2-135M-Instruct.Q4_1-")


@pytest.mark.models
def test_second_load_uses_the_cache_and_is_much_faster(loaded: Loaded) -> None:
    messages: list[str] = []
    started = time.perf_counter()
    again = ChatLLM(cache_dir=loaded.cache, progress=messages.append, device="cpu")
    seconds = time.perf_counter() - started
    assert not any(m.startswith("converting") for m in messages)
    assert any(m.startswith("loading") for m in messages)
    assert again.cache_path == loaded.llm.cache_path
    assert seconds < loaded.seconds / 3, (seconds, loaded.seconds)
    del again


@pytest.mark.models
def test_stream_yields_the_reply_token_by_token(loaded: Loaded) -> None:
    llm = loaded.llm
    messages = llm.chat_messages(PERSONA, "What is a good snack for a long night?")
    pieces = list(llm.stream(messages, max_new_tokens=40, temperature=0.0))
    assert pieces and all(isinstance(p, TokenPiece) for p in pieces)
    text = "".join(p.text for p in pieces)
    assert any(c.isalpha() for c in text) and " " in text.strip(), text
    assert "<|" not in text and "snack for a long night?" not in text  # no specials, no echo
    assert [p.index for p in pieces] == list(range(len(pieces)))
    times = [p.decoded_at for p in pieces]
    assert all(b >= a for a, b in zip(times, times[1:], strict=False))
    assert times[-1] > times[0]
    assert len(pieces) <= 40


@pytest.mark.models
def test_a_personas_keys_and_values_are_computed_once_and_the_reply_is_the_same(
    loaded: Loaded,
) -> None:
    llm = loaded.llm
    persona = "You are Orion, a dry, kind amateur astronomer. Answer in one short sentence."
    prompts = ["Which planet is up tonight?", "Is the moon full?"]
    kept = llm.prefixes
    # tokens in each forward pass: the prompt's, then one a token
    with passes(llm, lambda ids: ids.shape[-1]) as computed:

        def reply(prompt: str) -> tuple[str, list[int]]:
            """The reply, and the passes over more than one token: the prompt's."""
            computed.clear()
            messages = llm.chat_messages(persona, prompt)
            pieces = llm.stream(messages, max_new_tokens=12, temperature=0.0)
            return "".join(p.text for p in pieces), [n for n in computed if n > 1]

        try:
            llm.prefixes = NoPrefixes()  # type: ignore[assignment]
            whole = [reply(p) for p in prompts]
            llm.prefixes = kept
            misses = kept.misses
            reused = [reply(p) for p in prompts]
        finally:
            llm.prefixes = kept
    persona_tokens = len(llm._persona_ids(llm.chat_messages(persona, "")))
    assert persona_tokens > 10
    # the persona once (its first reply computes it on its own), then only what follows it
    assert kept.misses == misses + 1
    (n1,), (n2,) = [n for _, n in whole]
    assert [n for _, n in reused] == [[persona_tokens, n1 - persona_tokens], [n2 - persona_tokens]]
    # the same words, greedily decoded, as from the whole prompt
    assert [t for t, _ in reused] == [t for t, _ in whole]


@pytest.mark.models
def test_replies_written_beside_one_are_those_asked_alone_in_one_pass_a_step(
    loaded: Loaded,
) -> None:
    llm = loaded.llm
    persona = "You are Nova, a cheerful late-night radio host. Answer in one or two sentences."
    prompts = ["What is your favourite star?", "Do you ever sleep?", "Is it cold outside?"]
    first, *beside = [llm.chat_messages(persona, p) for p in prompts]
    alone = ["".join(p.text for p in llm.stream(m, 24, 0.0)) for m in (first, *beside)]
    kept: list[list[str | None]] = []
    with passes(llm, lambda ids: ids.shape[0]) as steps:  # the rows in each forward pass
        pieces = llm.stream(first, 24, 0.0, also=beside, kept=kept.append)
        streamed = "".join(p.text for p in pieces)
        assert llm.last_thread is not None
        llm.last_thread.join(timeout=60)  # the others finish after the first's reply
    assert streamed == alone[0]
    assert kept == [alone[1:]]
    # three rows a pass (the persona was kept from the replies alone), not a pass a row
    assert steps and set(steps) == {3}, steps


@pytest.mark.models
def test_a_generation_cut_short_keeps_none_of_the_replies_beside(loaded: Loaded) -> None:
    llm = loaded.llm
    first, other = (llm.chat_messages(PERSONA, p) for p in ("Tell a long story.", "Hello?"))
    kept: list[list[str | None]] = []
    pieces = llm.stream(first, 48, 0.0, also=[other], kept=kept.append)
    next(pieces)
    pieces.close()  # the consumer left: every row stops
    assert kept == [[None]]


@pytest.mark.models
def test_decode_time_leaves_out_the_holds_between_tokens(loaded: Loaded) -> None:
    # the speech-first gate holds the LLM between tokens: that is not decoding, and must not
    # count against the token/audio alignment (a token's Δt ≤ 3 audio frames)
    # the hold is longer than a token takes on a busy machine (0.1-0.25 s here), so a decode
    # time that counted it could not pass for one that does not
    messages = loaded.llm.chat_messages(PERSONA, "Count to five.")
    hold = lambda: time.sleep(0.5)  # noqa: E731
    pieces = list(loaded.llm.stream(messages, max_new_tokens=6, between_tokens=hold))
    assert pieces[0].decode_s is None and len(pieces) >= 3
    gaps = [b.decoded_at - a.decoded_at for a, b in zip(pieces, pieces[1:], strict=False)]
    assert min(gaps) >= 0.5
    assert all(0 < p.decode_s < 0.5 for p in pieces[1:]), [p.decode_s for p in pieces]
    # what is left of each gap is the decoding
    assert all(abs(g - 0.5 - p.decode_s) < 0.1 for g, p in zip(gaps, pieces[1:], strict=True))


@pytest.mark.models
def test_sampled_stream_gives_text(loaded: Loaded) -> None:
    messages = loaded.llm.chat_messages(PERSONA, "Say hello to the chat.")
    text = "".join(p.text for p in loaded.llm.stream(messages, max_new_tokens=24))
    assert any(c.isalpha() for c in text), text


@pytest.mark.models
def test_cancel_stops_within_a_few_tokens(loaded: Loaded) -> None:
    llm = loaded.llm
    before = threading.active_count()
    cancelled_at = 0.0
    cancel = threading.Event()
    pieces: list[TokenPiece] = []
    messages = llm.chat_messages(PERSONA, LONG_PROMPT)
    for piece in llm.stream(messages, max_new_tokens=300, temperature=0.0, cancel=cancel):
        pieces.append(piece)
        if len(pieces) == 3:
            cancel.set()
            cancelled_at = time.perf_counter()
    stopped_in = time.perf_counter() - cancelled_at
    assert 3 <= len(pieces) <= 5
    assert stopped_in < 2.0  # 300 tokens would take over 10 s on CPU
    assert llm.last_thread is not None and not llm.last_thread.is_alive()
    assert generate_threads() == []
    assert threading.active_count() <= before


@pytest.mark.models
def test_cancel_from_another_thread_while_waiting(loaded: Loaded) -> None:
    llm = loaded.llm
    cancel = threading.Event()
    # set 0.3 s after the first token, while the consumer waits for the next ones (a fixed
    # time from the start could fall in the prompt's prefill on a busy machine)
    timer = threading.Timer(0.3, cancel.set)
    messages = llm.chat_messages(PERSONA, LONG_PROMPT)
    count = 0
    for _ in llm.stream(messages, max_new_tokens=300, cancel=cancel):
        if count == 0:
            timer.start()
            cancelled_at = time.perf_counter() + 0.3
        count += 1
    timer.join()
    assert time.perf_counter() - cancelled_at < 2.0
    assert 0 < count < 100
    assert llm.last_thread is not None and not llm.last_thread.is_alive()


@pytest.mark.models
def test_closing_the_generator_stops_generation(loaded: Loaded) -> None:
    llm = loaded.llm
    before = threading.active_count()
    stream = llm.stream(llm.chat_messages(PERSONA, LONG_PROMPT), max_new_tokens=300)
    for _ in range(3):
        next(stream)
    assert generate_threads() == [llm.last_thread]  # the generate thread is running
    started = time.perf_counter()
    stream.close()
    assert time.perf_counter() - started < 2.0
    assert llm.last_thread is not None and not llm.last_thread.is_alive()
    assert generate_threads() == []
    assert threading.active_count() <= before


@pytest.mark.models
def test_warm_up_runs(loaded: Loaded) -> None:
    loaded.llm.warm_up()


def test_missing_explicit_gguf_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match="GGUF"):
        ChatLLM(gguf_path=tmp_path / "nope.gguf", cache_dir=tmp_path)
