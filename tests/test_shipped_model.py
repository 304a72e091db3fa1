"""The model the app opens on: what ships in checkpoints/en-de-small, and what its documents say about it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from safetensors import safe_open

from transformer.formats import checkpoint as ckpt
from transformer.formats.runs import read_metrics
from transformer.paper.config import preset
from transformer.search.decode import translate

README = Path(__file__).resolve().parents[1] / "README.md"
TEST_SETS = ("multi30k_test2016", "newstest2014", "tatoeba_new")  # the targets; newstest2013 too where recorded


@pytest.fixture(scope="module")
def shipped() -> Path:
    return ckpt.REPOSITORY_CHECKPOINTS / ckpt.DEFAULT_CHECKPOINT_NAME


def test_the_default_checkpoint_is_the_small_preset_stored_in_float16(shipped: Path, monkeypatch):
    monkeypatch.delenv("TRANSFORMER_CHECKPOINT", raising=False)
    assert ckpt.resolve() == shipped
    config = ckpt.load_config(shipped)
    small = preset("small", vocab_size=config.vocab_size)
    assert config.to_dict() == small.to_dict()
    with safe_open(shipped / ckpt.MODEL_FILE, framework="pt") as weights:
        dtypes = {weights.get_slice(name).get_dtype() for name in weights.keys()}  # noqa: SIM118 (not a dict)
    assert dtypes == {"F16"}
    assert (shipped / ckpt.MODEL_FILE).stat().st_size < 50e6
    for name in (ckpt.TOKENIZER_FILE, ckpt.META_FILE, ckpt.TRAINING_LOG_FILE, "MODEL_CARD.md"):
        assert (shipped / name).is_file(), f"{name} is missing from the shipped checkpoint"


def test_the_shipped_model_translates_everyday_sentences():
    loaded = ckpt.load_checkpoint()
    # The model card's everyday examples: the content words a German reader needs.
    sentences = {
        "The children are playing in the park.": {"Kinder", "spielen", "Park"},
        "My brother lives in Berlin and works as a doctor.": {"Bruder", "Berlin", "Arzt"},
        "Can you tell me where the train station is?": {"Bahnhof"},
    }
    for (sentence, words), output in zip(
        sentences.items(), translate(loaded.model, loaded.tokenizer, list(sentences)), strict=True
    ):
        assert words <= set(output.rstrip(".?").replace(",", "").split()), f"{sentence} → {output}"


def test_the_training_log_ends_at_the_shipped_step(shipped: Path):
    meta = ckpt.read_json(shipped / ckpt.META_FILE)
    records = read_metrics(shipped / ckpt.TRAINING_LOG_FILE)
    steps = [r["step"] for r in records if r.get("kind") == "train"]
    assert steps == sorted(steps) and meta["step"] - 100 <= steps[-1] <= meta["step"]
    assert any(r.get("kind") == "dev" and r.get("dev_bleu") is not None for r in records)


def test_the_model_card_and_readme_report_the_recorded_scores(shipped: Path):
    """Every beam-4 BLEU recorded by `python -m transformer evaluate --record` is the one the documents print."""
    meta = ckpt.read_json(shipped / ckpt.META_FILE)
    card = (shipped / "MODEL_CARD.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    recorded = {key.removesuffix(" beam4") for key in meta["scores"] if key.endswith(" beam4")}
    assert set(TEST_SETS) <= recorded
    for test_set in sorted(recorded):
        score = meta["scores"][f"{test_set} beam4"]
        for text, document in ((card, "MODEL_CARD.md"), (readme, "README.md")):
            # the BLEU, optionally with its 95% interval (± half its width), then the chrF
            bleu, chrf = f"{score['bleu']:.2f}", f"{score['chrf']:.2f}"
            printed = re.escape(bleu) + r"(?: ± \d+\.\d+)? \| " + re.escape(chrf)
            assert re.search(printed, text), f"{document}: {test_set} score out of date"
        assert score["bleu_signature"] in card
    assert f"{meta['step']:,} steps" in card and f"{meta['step']:,} steps" in readme


def test_heads_over_training_work_on_a_fresh_install(shipped: Path):
    """The shipped model carries a timeline, so the Paper figures page's training-step slider has steps to show:
    early snapshots of a run of the same recipe (labelled as such), then the shipped model itself."""
    from transformer.analysis.timeline import TIMELINE_FILE, load_timeline

    points = load_timeline(shipped / TIMELINE_FILE)
    step = int(ckpt.read_json(shipped / ckpt.META_FILE)["step"])
    earlier = [point for point in points if point.step < step]
    assert len(earlier) >= 3 and all(point.label == "rerun" for point in earlier)
    assert [point.step for point in points] == sorted(point.step for point in points)
    assert points[-1].step == step and points[-1].label == "averaged"
    assert (shipped / TIMELINE_FILE).stat().st_size < 10e6


def test_the_measurements_stored_beside_the_shipped_weights_are_theirs(shipped: Path):
    """What the app shows without measuring (head scores, head importance, the alignment reading and its error
    rate, the head atlas) was measured on exactly these weights, and the model card reports the alignment figure
    stored."""
    from transformer.analysis import atlas, precompute
    from transformer.analysis.ablation import read_importance
    from transformer.analysis.alignment_choice import stored_choice

    loaded = ckpt.load_checkpoint(shipped)
    assert precompute.read(loaded) is not None, "measured.safetensors is another model's: run precompute"
    assert read_importance(loaded) is not None, (
        "importance.json is another model's: run python -m transformer importance"
    )
    stored_atlas = atlas.stored(loaded)
    assert stored_atlas is not None, "atlas.json is another model's: run python -m transformer atlas --save"
    importance = read_importance(loaded)
    assert [head["importance_bleu_drop"] for head in stored_atlas["heads"]] == [
        importance["bleu_drop"][kind][layer][head]
        for kind in ("encoder", "decoder", "cross")
        for layer in range(6)
        for head in range(8)
    ], "atlas.json was measured before importance.json: run python -m transformer atlas --save again"
    alignment = stored_choice(loaded)
    assert alignment is not None, "alignment.json is another model's: run python -m transformer align --choose"
    card = (shipped / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert f"`{alignment['method']}`" in card and f"error rate of {alignment['aer']:.3f}" in card
