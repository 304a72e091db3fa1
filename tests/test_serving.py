"""Many sessions on one model (transformer.serving.translator): batched translations equal one-at-a-time ones, a
session's switched-off heads (on its private copy) never reach another's translation, and a failing batch fails only
its own callers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from transformer.analysis import ablation
from transformer.analysis.attention import KINDS, Translation, translate_with_attention
from transformer.formats.checkpoint import LoadedCheckpoint, load_checkpoint
from transformer.search.decode import DecodingOptions
from transformer.serving import translator as serving

SENTENCES = [
    "the small cat sees the big dog.",
    "the dog sees the cat.",
    "the big cat sees the small dog.",
    "the cat sees the dog.",
    "the small dog sees the cat.",
    "the big dog sees the small cat.",
]


@pytest.fixture
def loaded(trained_checkpoint: Path) -> LoadedCheckpoint:
    return load_checkpoint(trained_checkpoint)


def same(first: Translation, second: Translation) -> bool:
    return (
        first.translation == second.translation
        and first.output_ids == second.output_ids
        and all(
            getattr(first.maps, kind).shape == getattr(second.maps, kind).shape
            and np.allclose(getattr(first.maps, kind), getattr(second.maps, kind), atol=1e-5)
            for kind in KINDS
        )
    )


def wait_until(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def in_threads(translator: serving.Translator, requests: list[tuple[str, DecodingOptions]]) -> list:
    """Each request from its own thread, all queued while the model is held; their results (or errors) in order."""
    results: list = [None] * len(requests)

    def call(index: int, text: str, options: DecodingOptions) -> None:
        try:
            results[index] = translator.translate(text, options)
        except Exception as error:
            results[index] = error

    threads = [threading.Thread(target=call, args=(i, *r)) for i, r in enumerate(requests)]
    with serving.exclusive(translator.loaded):  # as if another session were using the model
        for thread in threads:
            thread.start()
        wait_until(lambda: translator.waiting == len(requests))
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive()
    return results


def test_sentences_that_arrive_while_the_model_is_busy_are_searched_together(loaded):
    translator = serving.Translator(loaded)
    options = DecodingOptions(beam_size=3)
    results = in_threads(translator, [(text, options) for text in SENTENCES])
    assert list(translator.batches) == [len(SENTENCES)]  # one search for all six
    for text, result in zip(SENTENCES, results, strict=True):
        alone = translate_with_attention(loaded.model, loaded.tokenizer, text, options)
        assert same(result, alone), text
        assert result.source_text == text and result.seconds["batch"] == len(SENTENCES)
        assert result.seconds["waited"] > 0


def test_a_sentence_arriving_at_a_free_model_starts_at_once_and_alone(loaded):
    translator = serving.Translator(loaded)
    result = translator.translate(SENTENCES[0])
    assert list(translator.batches) == [1] and result.seconds["batch"] == 1
    assert same(result, translate_with_attention(loaded.model, loaded.tokenizer, SENTENCES[0]))


def test_batches_never_mix_decoding_options_and_respect_the_size_limit(loaded):
    translator = serving.Translator(loaded, max_batch=2)
    greedy, beam = DecodingOptions(beam_size=1), DecodingOptions(beam_size=4)
    requests = [(SENTENCES[0], greedy), (SENTENCES[1], beam), (SENTENCES[2], greedy), (SENTENCES[3], greedy)]
    results = in_threads(translator, requests)
    assert sorted(translator.batches) == [1, 1, 2] and sum(translator.batches) == 4
    for (text, options), result in zip(requests, results, strict=True):
        assert result.options == options
        assert same(result, translate_with_attention(loaded.model, loaded.tokenizer, text, options))


def test_switched_off_heads_of_one_session_never_reach_another_sessions_translation(loaded):
    """One session switches every encoder and cross head off (the What if page's ablation) on the scratch copy while
    another asks for a translation: that one neither waits for the ablation nor sees its heads off."""
    translator = serving.Translator(loaded)
    text = SENTENCES[0]
    intact = translate_with_attention(loaded.model, loaded.tokenizer, text)
    layers = {"encoder": loaded.config.encoder_layers, "cross": loaded.config.decoder_layers}
    off = [
        (kind, layer, head)
        for kind, count in layers.items()
        for layer in range(count)
        for head in range(loaded.config.num_heads)
    ]
    answer: list[Translation] = []
    other = threading.Thread(target=lambda: answer.append(translator.translate(text)))
    with serving.scratch_model(loaded) as private, private.head_mask(ablation.head_mask(private, off)):
        assert private is not loaded.model
        ablated = translate_with_attention(private, loaded.tokenizer, text)
        other.start()
        other.join(timeout=60)  # answered while the ablation still holds its copy
        assert answer, "the translation waited for another session's ablation"
    assert not same(ablated, intact)  # the heads matter: a translation during the ablation would show it
    assert same(answer[0], intact)
    with serving.scratch_model(loaded) as again:
        assert again is private  # one copy per checkpoint, lent again
    assert all(
        module.head_gate is None or bool(module.head_gate.all())
        for kind in ("encoder", "cross")
        for module in loaded.model.attention_modules(kind)
    )


def test_a_failing_batch_fails_its_own_callers_only_and_the_queue_goes_on(loaded, monkeypatch):
    translator = serving.Translator(loaded)
    real = serving.translate_many_with_attention

    def failing(model, tokenizer, texts, options, max_tokens):
        if options.beam_size == 2:
            raise RuntimeError("out of memory")
        return real(model, tokenizer, texts, options, max_tokens)

    monkeypatch.setattr(serving, "translate_many_with_attention", failing)
    requests = [
        (SENTENCES[0], DecodingOptions(beam_size=2)),
        (SENTENCES[1], DecodingOptions(beam_size=4)),
        (SENTENCES[2], DecodingOptions(beam_size=2)),
    ]
    results = in_threads(translator, requests)
    assert [type(r).__name__ for r in results] == ["RuntimeError", "Translation", "RuntimeError"]
    assert "out of memory" in str(results[0])
    assert translator.translate(SENTENCES[3]).source_text == SENTENCES[3]  # nothing is left stuck
    assert translator.waiting == 0


def test_the_app_translates_through_the_shared_queue(loaded, monkeypatch):
    """The main page's cached translation goes through one Translator per loaded checkpoint (not the model
    directly), so the What if page's ablations and simultaneous sessions are serialised and batched."""
    import streamlit as st

    from pages import models

    st.cache_data.clear()
    st.cache_resource.clear()
    result = models.cached_translation(loaded, SENTENCES[1], DecodingOptions())
    queue = models.shared_translator(loaded)
    assert list(queue.batches) == [1] and result.seconds["batch"] == 1
    assert models.shared_translator(loaded) is queue


def test_pages_in_every_slot_asking_for_the_same_translation_at_once_all_get_it(loaded, monkeypatch):
    """A class opening the app at once: every first page translates the same default sentence. The first computes
    it (waiting for the model outside its slot) while the others wait for that cache entry; they must wait outside
    their slots too, or the first could never take a slot back to finish and the server would hang."""
    import streamlit as st

    from pages import models
    from pages.page_slots import page_slots

    class SlowTranslator:
        def translate(self, text, options, max_tokens):
            time.sleep(0.3)  # the others arrive while the entry is being computed
            return f"translated: {text}"

    st.cache_data.clear()
    monkeypatch.setattr(models, "shared_translator", lambda _loaded: SlowTranslator())
    slots = page_slots()
    pages = slots.count + 1
    start, results = threading.Barrier(pages), []

    def page() -> None:
        start.wait(10)
        with slots.run():
            results.append(models.cached_translation(loaded, SENTENCES[0], DecodingOptions()))

    threads = [threading.Thread(target=page, daemon=True) for _ in range(pages)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == [f"translated: {SENTENCES[0]}"] * pages
    st.cache_data.clear()


def test_a_page_waiting_for_the_model_leaves_its_slot_to_the_next_page():
    """With one page slot, a page paused while it waits for the model lets another page run meanwhile, and takes
    a slot back (after the other page is done) before it goes on; a pause outside a slot frees nothing."""
    from pages.page_slots import PageSlots

    slots = PageSlots(1)
    events: list[str] = []
    waiting, other_done = threading.Event(), threading.Event()

    def first_page() -> None:
        with slots.run():
            with slots.paused():
                events.append("first waits for the model")
                waiting.set()
                assert other_done.wait(10)
                time.sleep(0.05)  # the other page still holds the only slot for a moment
            events.append("first goes on")

    def second_page() -> None:
        assert waiting.wait(10)
        with slots.run():
            events.append("second runs")
            other_done.set()
            time.sleep(0.2)
            events.append("second done")

    threads = [threading.Thread(target=first_page), threading.Thread(target=second_page)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert events == ["first waits for the model", "second runs", "second done", "first goes on"]

    with slots.paused():  # not in a slot: must not add one
        pass
    entered = threading.Event()

    def intruder() -> None:
        with slots.run():
            entered.set()

    with slots.run():
        thread = threading.Thread(target=intruder, daemon=True)
        thread.start()
        assert not entered.wait(0.3)  # still one slot: the other page waits
    assert entered.wait(5)


def test_a_batch_runs_with_every_page_slot_taken_but_never_waits_long_for_one():
    """exclusive() waits for the pages running Python to finish or pause, keeps new pages out while the batch runs,
    and runs anyway after its timeout when a page keeps its slot (a long measurement)."""
    from pages.page_slots import PageSlots

    slots = PageSlots(2)
    events: list[str] = []
    page_started, batch_running = threading.Event(), threading.Event()

    def short_page() -> None:
        with slots.run():
            page_started.set()
            time.sleep(0.2)
            events.append("page done")

    def late_page() -> None:
        assert batch_running.wait(10)
        with slots.run():
            events.append("late page runs")

    page = threading.Thread(target=short_page)
    page.start()
    assert page_started.wait(10)
    late = threading.Thread(target=late_page)
    late.start()
    with slots.exclusive(timeout=5) as taken:
        events.append("batch runs")
        batch_running.set()
        time.sleep(0.2)
        events.append("batch done")
    page.join(10)
    late.join(10)
    assert taken == 2
    assert events == ["page done", "batch runs", "batch done", "late page runs"]

    holding, release = threading.Event(), threading.Event()

    def long_page() -> None:
        with slots.run():
            holding.set()
            release.wait(10)

    long = threading.Thread(target=long_page)
    long.start()
    assert holding.wait(10)
    started = time.perf_counter()
    with slots.exclusive(timeout=0.3) as taken:
        assert taken == 1  # the long page keeps its slot; the batch did not wait for it
    assert time.perf_counter() - started < 3
    release.set()
    long.join(10)
    with slots.run(), pytest.raises(RuntimeError, match="pause the slot first"), slots.exclusive():
        pass


def test_the_translator_enters_around_batch_for_every_batch(loaded: LoadedCheckpoint):
    entered: list[int] = []

    @contextmanager
    def around() -> Iterator[None]:
        entered.append(threading.get_ident())
        yield

    translator = serving.Translator(loaded, around_batch=around)
    first = translator.translate(SENTENCES[0])
    translator.translate(SENTENCES[1])
    assert len(entered) == 2 and first.translation


@pytest.mark.parametrize(
    ("ip_address", "headers", "here"),
    [
        (None, {"Host": "localhost:8501"}, True),  # Streamlit gives no address for 127.0.0.1 and ::1
        ("192.0.2.7", {"Host": "class.example"}, False),
        (None, {"X-Forwarded-For": "192.0.2.7"}, False),  # a proxy on the server's machine, the visitor elsewhere
        (None, {"x-real-ip": "192.0.2.7"}, False),
    ],
)
def test_a_browser_on_the_servers_own_machine_is_told_apart_from_visitors_elsewhere(
    monkeypatch, ip_address, headers, here
):
    """The search leaves a core to a browser that draws the page on the server's own cores; a visitor behind a
    proxy, or from another machine, gets every core while no page runs."""
    from types import SimpleNamespace

    from pages import page_slots

    monkeypatch.setattr(page_slots, "get_script_run_ctx", lambda: object())
    monkeypatch.setattr(
        page_slots, "st", SimpleNamespace(context=SimpleNamespace(ip_address=ip_address, headers=headers))
    )
    assert page_slots.browser_on_this_machine() is here
    monkeypatch.setattr(page_slots, "get_script_run_ctx", lambda: None)
    assert page_slots.browser_on_this_machine() is False  # outside a session (the translation process's start)
