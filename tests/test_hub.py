"""Hugging Face models as this project's model, and this project's model as a Hugging Face Marian model.

Every check compares two implementations of one network on the same input: transformers' own Marian and M2M100
modules against the model :mod:`transformer.formats.hub` builds from the same folder, and the shipped model against its
export. Nothing here asserts what a random model happens to translate.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import needs_browser
from tests.hub_models import make_bart, make_m2m100, make_marian, make_nllb
from transformer.formats import checkpoint_files
from transformer.formats.checkpoint import REPOSITORY_CHECKPOINTS, CheckpointError, load_checkpoint
from transformer.formats.hub.export import export_marian
from transformer.formats.hub.families import FAMILIES, HubError, cached_hub_models
from transformer.formats.hub.weights import Vocabulary
from transformer.paper.model import Transformer
from transformer.search.decode import beam_search, greedy_decode

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

SENTENCES = [
    "The children are playing in the park.",
    "The Law will never be perfect, but its application should be just.",
    "Tom isn't sure what Mary wants.",
    "Héllo — “quotes”, emoji 🎉 and 한국어!",
]
REPOSITORY = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def shipped():
    return load_checkpoint(REPOSITORY_CHECKPOINTS / "en-de-small")


@pytest.fixture(scope="module")
def exported(shipped, tmp_path_factory) -> Path:
    return export_marian(shipped, tmp_path_factory.mktemp("export") / "marian-en-de")


@pytest.fixture(scope="module")
def tiny_folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hub")
    spm = REPOSITORY_CHECKPOINTS / "en-de-small" / "spm.model"
    return {
        "marian": make_marian(spm, root / "opus-mt-en-de"),
        "m2m_100": make_m2m100(spm, root / "m2m100"),
        "nllb": make_nllb(root / "nllb"),
        "bart": make_bart(root / "bart"),
    }


def family_of(name: str) -> str:
    return "m2m_100" if name == "nllb" else name


def hf_model(folder: Path):
    return transformers.AutoModelForSeq2SeqLM.from_pretrained(
        folder, local_files_only=True, attn_implementation="eager"
    ).eval()


def ours_over_hf_ids(logits: torch.Tensor, loaded) -> torch.Tensor:
    """This project's logits (…, V') rearranged as the Hugging Face vocabulary's (…, V), the start token's added row
    left out."""
    vocabulary = loaded.tokenizer.vocabulary
    rearranged = torch.empty(*logits.shape[:-1], max(vocabulary.order) + 1)
    for ours, theirs in enumerate(vocabulary.order):
        if ours != vocabulary.added:
            rearranged[..., theirs] = logits[..., ours]
    return rearranged


def compare_passes(loaded, hf, sentences: list[str]) -> tuple[float, float, float]:
    """Largest differences (logits, log-probabilities, attention over every map) of a batched teacher-forced pass
    with padding, the targets being this project's greedy translations."""
    model, config = loaded.model, loaded.config
    order = torch.tensor(loaded.tokenizer.vocabulary.order)
    sources = [[*loaded.tokenizer.encode(s), config.eos_id] for s in sentences]
    with torch.no_grad():
        outputs = [greedy_decode(model, torch.tensor([ids]), max_extra_tokens=8)[0] for ids in sources]
    width, length = max(map(len, sources)), max(map(len, outputs)) + 1
    source = torch.tensor([ids + [config.pad_id] * (width - len(ids)) for ids in sources])
    target = torch.tensor([[config.bos_id, *out] + [config.pad_id] * (length - 1 - len(out)) for out in outputs])
    with torch.no_grad():
        mine = model(source, target, need_weights=True)
        theirs = hf(
            input_ids=order[source],
            attention_mask=(source != config.pad_id).long(),
            decoder_input_ids=order[target],
            output_attentions=True,
        )
    logit_gap = log_gap = attention_gap = 0.0
    for row, out in enumerate(outputs):
        real = slice(0, len(out) + 1)  # positions past a shorter translation read padding in neither model
        mapped = ours_over_hf_ids(mine.logits[row, real], loaded)
        logit_gap = max(logit_gap, float((mapped - theirs.logits[row, real]).abs().max()))
        log_gap = max(
            log_gap,
            float((torch.log_softmax(mapped, -1) - torch.log_softmax(theirs.logits[row, real], -1)).abs().max()),
        )
        keys, queries = len(sources[row]), len(out) + 1
        for layer in range(config.encoder_layers):
            gap = (
                mine.encoder_attention[row, layer, :, :keys, :keys]
                - theirs.encoder_attentions[layer][row, :, :keys, :keys]
            )
            attention_gap = max(attention_gap, float(gap.abs().max()))
        for layer in range(config.decoder_layers):
            own = mine.decoder_attention[row, layer, :, :queries, :queries]
            gap = own - theirs.decoder_attentions[layer][row, :, :queries, :queries]
            attention_gap = max(attention_gap, float(gap.abs().max()))
            gap = (
                mine.cross_attention[row, layer, :, :queries, :keys]
                - theirs.cross_attentions[layer][row, :, :queries, :keys]
            )
            attention_gap = max(attention_gap, float(gap.abs().max()))
    return logit_gap, log_gap, attention_gap


# ------------------------------------------------------------------------------------------------ the export
def test_the_export_opens_offline_as_marian_and_computes_the_same(shipped, exported):
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported, local_files_only=True)
    hf = hf_model(exported)
    assert type(hf).__name__ == "MarianMTModel" and type(tokenizer).__name__ == "MarianTokenizer"
    for sentence in SENTENCES:
        assert tokenizer(sentence).input_ids == [*shipped.tokenizer.encode(sentence), shipped.config.eos_id]
    shipped.tokenizer.vocabulary = Vocabulary.of(shipped.config.vocab_size, 0, 1, 2, 3)  # the identity
    try:
        logits, _, attention = compare_passes(shipped, hf, SENTENCES)
    finally:
        del shipped.tokenizer.vocabulary
    assert logits < 1e-4 and attention < 1e-5


def test_the_export_translates_as_the_project_does(shipped, exported):
    hf = hf_model(exported)
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported, local_files_only=True)
    for sentence in SENTENCES[:3]:
        source = torch.tensor([[*shipped.tokenizer.encode(sentence), shipped.config.eos_id]])
        with torch.no_grad():
            greedy = greedy_decode(shipped.model, source)[0]
            beam = beam_search(shipped.model, source, 4, alpha=0.0)[0]
            hf_greedy = hf.generate(source, num_beams=1, do_sample=False, max_new_tokens=80)[0]
            hf_beam = hf.generate(source, num_beams=4, length_penalty=0.0, early_stopping=True, max_new_tokens=80)[0]
        assert tokenizer.decode(hf_greedy, skip_special_tokens=True) == shipped.tokenizer.decode(greedy)
        assert hf_greedy.tolist()[1:-1] == greedy and hf_beam.tolist()[1:-1] == beam


def test_the_export_comes_back_as_the_same_model(shipped, exported):
    back = load_checkpoint(exported)
    assert back.config.replace(dropout=shipped.config.dropout) == shipped.config
    assert back.config.paper_architecture and back.hub["family"] == "marian"
    for name, tensor in shipped.model.state_dict().items():
        assert torch.equal(back.model.state_dict()[name], tensor), name
    assert back.tokenizer.encode(SENTENCES[3]) == shipped.tokenizer.encode(SENTENCES[3])


def test_export_refuses_to_overwrite_and_the_command_writes_a_folder(exported, tmp_path):
    with pytest.raises(HubError, match="--force"):
        export_marian(load_checkpoint("en-de-small"), exported)
    out = tmp_path / "hf"
    command = [sys.executable, "-m", "transformer", "export", "huggingface", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPOSITORY, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "MarianMTModel" in done.stdout
    assert json.loads((out / "config.json").read_text())["model_type"] == "marian"


# ------------------------------------------------------------------------------------------------ opening models
@pytest.mark.parametrize("family", ["marian", "m2m_100", "nllb", "bart"])
def test_a_hugging_face_model_opens_as_the_same_function(family, tiny_folders):
    folder = tiny_folders[family]
    loaded = load_checkpoint(folder)
    assert loaded.hub["family"] == family_of(family) and loaded.config.languages == ("en", "de")
    assert loaded.config.norm_first == (family in ("m2m_100", "nllb"))
    assert (loaded.config.positional == "learned") == loaded.config.embedding_norm == (family == "bart")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    if family == "m2m_100":
        tokenizer.src_lang = "en"
    order = loaded.tokenizer.vocabulary.order
    for sentence in SENTENCES:
        ours = [*loaded.tokenizer.encode(sentence), loaded.config.eos_id]
        assert [order[i] for i in ours] == tokenizer(sentence).input_ids
    logits, log_probabilities, attention = compare_passes(loaded, hf_model(folder), SENTENCES)
    assert logits < 1e-4 and log_probabilities < 1e-4 and attention < 1e-5


@pytest.mark.parametrize("family", ["marian", "m2m_100", "nllb", "bart"])
def test_a_hugging_face_model_searches_as_transformers_does(family, tiny_folders):
    folder = tiny_folders[family]
    loaded = load_checkpoint(folder)
    hf = hf_model(folder)
    order = torch.tensor(loaded.tokenizer.vocabulary.order)
    forced = {}
    if family != "marian":
        forced["forced_bos_token_id"] = int(order[loaded.config.forced_first_id])
    for sentence in SENTENCES:
        source = torch.tensor([[*loaded.tokenizer.encode(sentence), loaded.config.eos_id]])
        with torch.no_grad():
            ours = greedy_decode(loaded.model, source, max_extra_tokens=12)[0]
            theirs = hf.generate(order[source], num_beams=1, do_sample=False, max_new_tokens=len(ours) + 1, **forced)
        assert theirs[0].tolist()[1 : len(ours) + 1] == order[ours].tolist()
    if family != "marian":  # the target language (BART: <s>) comes first, as transformers forces it
        assert ours[0] == loaded.config.forced_first_id
        assert loaded.tokenizer.pieces([ours[0]]) == [{"m2m_100": "__de__", "nllb": "deu_Latn", "bart": "<s>"}[family]]


@pytest.mark.parametrize("family", ["m2m_100", "bart"])
def test_switching_a_head_off_is_zeroing_its_slice_before_the_output_projection(family, tiny_folders):
    folder = tiny_folders[family]
    loaded = load_checkpoint(folder)
    hf = hf_model(folder)
    order = torch.tensor(loaded.tokenizer.vocabulary.order)
    config = loaded.config
    source = torch.tensor([[*loaded.tokenizer.encode(SENTENCES[1]), config.eos_id]])
    target = torch.tensor([[config.bos_id, config.forced_first_id, 50, 60, 70]])
    mask = {"cross": torch.ones(config.decoder_layers, config.num_heads)}
    mask["cross"][1, 2] = 0.0
    width = config.head_dim

    def zero_head(module, args):
        hidden = args[0].clone()
        hidden[..., 2 * width : 3 * width] = 0.0
        return (hidden,)

    hook = hf.model.decoder.layers[1].encoder_attn.out_proj.register_forward_pre_hook(zero_head)
    with torch.no_grad():
        try:
            theirs = hf(input_ids=order[source], decoder_input_ids=order[target]).logits
        finally:
            hook.remove()
        switched_off = loaded.model(source, target, head_mask=mask).logits
        intact = loaded.model(source, target).logits
    assert (ours_over_hf_ids(switched_off, loaded) - theirs).abs().max() < 1e-4
    assert (switched_off - intact).abs().max() > 1e-3  # the switched-off head changed what the model predicts


def test_a_hugging_face_model_runs_every_view_of_the_app(tiny_folders):
    from transformer.analysis.attention import translate_with_attention
    from transformer.analysis.logit_lens import logit_lens
    from transformer.analysis.steps import head_steps

    loaded = load_checkpoint(tiny_folders["m2m_100"])
    translation = translate_with_attention(loaded.model, loaded.tokenizer, SENTENCES[0])
    config = loaded.config
    assert translation.maps.encoder.shape[:2] == (config.encoder_layers, config.num_heads)
    assert translation.maps.source_tokens[0] == "__en__"  # the source-language token the model reads first
    assert translation.maps.target_tokens[1] == "__de__"  # and the target language it is made to write first
    source_ids, output_ids = translation.source_ids, translation.output_ids
    for kind in ("encoder", "decoder", "cross"):
        steps = head_steps(loaded.model, loaded.tokenizer, source_ids, output_ids, kind, 1, 2)
        assert steps.norm_first and max(steps.agreement().values()) < 1e-4
    lens = logit_lens(loaded, source_ids, output_ids)
    # the last layer through the final LayerNorm is the model's own prediction
    with torch.no_grad():
        logits = loaded.model(torch.tensor([source_ids]), torch.tensor([[config.bos_id, *output_ids]])).logits[0]
    written = torch.tensor([*output_ids, config.eos_id])
    expected = torch.softmax(logits, -1).gather(1, written[:, None])[:, 0]
    assert torch.allclose(torch.from_numpy(lens.probability[-1]), expected, atol=1e-5)


def test_measurements_of_a_hugging_face_model_stay_out_of_its_folder(tiny_folders, tmp_path, monkeypatch):
    from transformer.formats.checkpoint import read_beside, save_beside

    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path / "cache"))
    folder = tiny_folders["marian"]
    before = sorted(p.name for p in folder.iterdir())
    loaded = load_checkpoint(folder)
    stored = save_beside(loaded, "alignment.json", {"aer": 0.5})
    assert stored.is_relative_to(tmp_path / "cache")
    assert read_beside(loaded, "alignment.json")["aer"] == 0.5
    assert sorted(p.name for p in folder.iterdir()) == before


# ------------------------------------------------------------------------------------------------ bad folders
def test_folders_that_cannot_open_say_why(tiny_folders, tmp_path):
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 16}))
    with pytest.raises(CheckpointError, match="not an encoder–decoder"):
        load_checkpoint(bert)

    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    (gpt2 / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(CheckpointError, match="Marian"):
        load_checkpoint(gpt2)

    no_tokenizer = tmp_path / "no-tokenizer"
    shutil.copytree(tiny_folders["marian"], no_tokenizer)
    for name in ("vocab.json", "source.spm", "target.spm", "tokenizer_config.json"):
        (no_tokenizer / name).unlink()
    with pytest.raises(CheckpointError, match="tokenizer"):
        load_checkpoint(no_tokenizer)

    corrupt = tmp_path / "corrupt"
    shutil.copytree(tiny_folders["marian"], corrupt)
    data = (corrupt / "model.safetensors").read_bytes()
    (corrupt / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="safetensors"):
        load_checkpoint(corrupt)

    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_folders["marian"], pickled)
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="pickle"):
        load_checkpoint(pickled)


def test_a_hub_id_opens_only_from_the_local_cache(tiny_folders, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointError, match="hf download Helsinki-NLP/opus-mt-xx-yy"):
        load_checkpoint("Helsinki-NLP/opus-mt-xx-yy")
    # A snapshot in the cache's layout opens by its id, and is listed among the models to choose.
    snapshot = tmp_path / "hub" / "models--Helsinki-NLP--opus-mt-en-de" / "snapshots" / "0123abc"
    shutil.copytree(tiny_folders["marian"], snapshot)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0123abc")
    assert cached_hub_models() == ["Helsinki-NLP/opus-mt-en-de"]
    loaded = load_checkpoint("Helsinki-NLP/opus-mt-en-de")
    assert loaded.hub["family"] == "marian" and loaded.config.languages == ("en", "de")
    assert loaded.hub["name"] == "Helsinki-NLP/opus-mt-en-de"


def test_a_model_too_large_for_memory_is_refused_before_reading(tiny_folders, monkeypatch):
    monkeypatch.setattr(checkpoint_files, "available_memory", lambda: 4096)
    with pytest.raises(CheckpointError, match="memory"):
        load_checkpoint(tiny_folders["marian"])


@pytest.mark.parametrize("family", ["marian", "m2m_100", "bart"])
def test_commands_take_a_hugging_face_folder(family, tiny_folders):
    folder = tiny_folders[family]
    done = subprocess.run(
        [sys.executable, "-m", "transformer", "translate", "--checkpoint", str(folder)],
        input="The children are playing in the park.\n",
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    loaded = load_checkpoint(folder)
    with torch.no_grad():
        source = torch.tensor([[*loaded.tokenizer.encode("The children are playing in the park."), 3]])
        expected = loaded.tokenizer.decode(beam_search(loaded.model, source, 4)[0])
    assert done.stdout.strip() == expected.strip()


def test_the_paper_model_is_unchanged_by_the_new_options():
    config = load_checkpoint("en-de-small").config
    assert config.paper_architecture
    model = Transformer(config)
    assert model.encoder_norm is None and model.output_bias is None


# ------------------------------------------------------------------------------------------------ the app
PAGE_FILES = sorted(
    path.name
    for path in (REPOSITORY / "pages").glob("*.py")
    if path.name
    in {
        "lessons.py",
        "step_by_step.py",
        "paper_figures.py",
        "head_discovery.py",
        "head_atlas.py",
        "what_if.py",
        "positional_encoding.py",
        "toy_model.py",
        "why_self_attention.py",
        "model_and_training.py",
    }
)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["marian", "m2m_100", "nllb", "bart"])
def test_every_page_opens_on_a_hugging_face_model(family, tiny_folders, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import no_exceptions

    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(tiny_folders[family]))
    before = sorted(p.name for p in tiny_folders[family].iterdir())
    app = AppTest.from_file(str(REPOSITORY / "app.py"), default_timeout=300).run()
    no_exceptions(app)
    summary = " ".join(caption.value for caption in app.sidebar.caption)
    assert FAMILIES[family_of(family)] in summary and "English → German" in summary and "2 encoder" in summary
    assert app.get("plotly_chart")  # the translation's attention is drawn
    for page in PAGE_FILES:
        app = AppTest.from_file(str(REPOSITORY / "pages" / page), default_timeout=300).run()
        no_exceptions(app)
        assert not app.error, (page, [error.value for error in app.error])
    assert sorted(p.name for p in tiny_folders[family].iterdir()) == before  # nothing written into the model's folder


HUB_ROBOT_ACTIONS = 20  # the benchmark walks 300 on each family (docs/models.md)


@pytest.mark.slow
@needs_browser
def test_a_robot_visitor_on_a_hugging_face_model_meets_no_error(browser, tiny_folders, tmp_path):
    """benchmarks/robot_visitor.py in Chromium with the app opened on a tiny M2M100 model (pre-norm, language
    tokens): a 20-action journey over every page, tab and control, back/forward, reloads and fresh links, with no
    error and no lost choice (the benchmark walks as long as it is asked)."""
    from benchmarks.app_server import serving
    from tests.test_browser import robot_visitor

    log = tmp_path / "server.log"
    environment = {**os.environ, "ATTENTION_EXPLORER_CACHE": str(tmp_path / "cache")}
    with serving(str(tiny_folders["m2m_100"]), log=log, environment=environment) as (origin, _):
        robot = robot_visitor()
        journey = robot.walk(
            origin, actions=HUB_ROBOT_ACTIONS, seed=5, pages=sorted(set(robot.PAGES.values())), log=log, browser=browser
        )
    report = [f"{v.what} after action {v.action}: {v.detail}\n  " + "\n  ".join(v.trail) for v in journey.violations]
    assert journey.count == HUB_ROBOT_ACTIONS and journey.violations == [], "\n".join(report)


def test_language_tokens_stay_out_of_the_words(tiny_folders):
    """M2M100 reads its source-language token before the words and writes its target-language token first: a
    German sentence to score starts with that token, and word alignment's maps leave both out, as they leave </s>."""
    from transformer.analysis.word_alignment import force, word_pieces

    loaded = load_checkpoint(tiny_folders["m2m_100"])
    config = loaded.config
    assert loaded.tokenizer.encode_target("Die Kinder spielen.")[0] == config.forced_first_id
    assert loaded.tokenizer.encode("The children.")[0] == loaded.tokenizer.source_prefix[0]
    english, german = "The children play .".split(), "Die Kinder spielen .".split()
    (pair,) = force(loaded, [" ".join(english)], [" ".join(german)])
    source_ids, _ = word_pieces(loaded, english)
    target_ids, _ = word_pieces(loaded, german)
    assert config.forced_first_id not in target_ids and loaded.tokenizer.source_prefix[0] not in source_ids
    # [layers, heads, the output's rows and </s>'s, the source's pieces and </s>]
    assert pair.cross.shape[2:] == (len(target_ids) + 1, len(source_ids) + 1)
    with torch.no_grad():
        full = loaded.model(
            torch.tensor([[*loaded.tokenizer.source_prefix, *source_ids, config.eos_id]]),
            torch.tensor([[config.bos_id, config.forced_first_id, *target_ids]]),
            need_weights=True,
        ).cross_attention[0]
    assert np.allclose(pair.cross, full[:, :, 1:, 1:].numpy(), atol=1e-6)


def test_the_app_opens_a_typed_folder_and_goes_on_with_its_model_when_one_cannot_open(
    tiny_folders, tmp_path, monkeypatch
):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import no_exceptions

    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(tiny_folders["marian"]))
    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "1")
    app = AppTest.from_file(str(REPOSITORY / "app.py"), default_timeout=300).run()
    no_exceptions(app)
    app.sidebar.text_input(key="open_model").input(str(tiny_folders["m2m_100"])).run()
    no_exceptions(app)
    assert app.sidebar.selectbox(key="checkpoint").value == str(tiny_folders["m2m_100"])
    assert any(FAMILIES["m2m_100"] in caption.value for caption in app.sidebar.caption)

    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    (gpt2 / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    app.sidebar.text_input(key="open_model").input(str(gpt2)).run()
    no_exceptions(app)
    assert any("not an encoder–decoder" in error.value for error in app.sidebar.error)
    assert app.sidebar.selectbox(key="checkpoint").value == str(tiny_folders["marian"])  # back to the default
    assert app.get("plotly_chart") and not app.main.error  # the page goes on with it

    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "0")  # a class's server: no folder from a visitor
    app = AppTest.from_file(str(REPOSITORY / "app.py"), default_timeout=300)
    app.query_params["checkpoint"] = str(tiny_folders["m2m_100"])
    app.run()
    no_exceptions(app)
    assert not app.sidebar.text_input and app.sidebar.selectbox(key="checkpoint").value == str(tiny_folders["marian"])


def test_the_atlas_reads_treebank_words_past_the_language_tokens(tiny_folders):
    from transformer.analysis import atlas

    if not atlas.ENGLISH_TREES.is_file():
        pytest.fail(f"the treebanks are missing: {atlas.ENGLISH_TREES}")
    loaded = load_checkpoint(tiny_folders["m2m_100"])
    found = atlas.build(loaded, 8)
    config = loaded.config
    assert found["treebank"]["skipped"] == 0  # the source and target language tokens spell no word, and need not
    # alone too: English sentences as a source, German ones after an empty source (its language tokens only)
    assert {kind: found["held_out_treebanks"][kind]["skipped"] for kind in ("encoder", "decoder")} == {
        "encoder": 0,
        "decoder": 0,
    }
    assert len(found["heads"]) == (config.encoder_layers + 2 * config.decoder_layers) * config.num_heads
