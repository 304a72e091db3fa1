"""The CTranslate2 export: the converted model computes what this project's model computes and searches to the same
translations (CTranslate2 is an optional extra; the dev install brings it)."""

from __future__ import annotations

import ctranslate2
import pytest
import torch

from transformer.cli.export import main
from transformer.formats.checkpoint import load_checkpoint
from transformer.formats.ctranslate2 import ctranslate2_spec
from transformer.paper.config import preset
from transformer.paper.data import pad
from transformer.paper.model import Transformer
from transformer.paper.tokenizer import BOS_ID, EOS_ID
from transformer.search.decode import GREEDY, DecodingOptions, length_penalty, translate_ids

SENTENCES = [
    "The children are playing in the park.",
    "I think it is going to rain tomorrow.",
    "The Law will never be perfect, but its application should be just.",
    "Where is the station?",
    "She has been reading the same book for three weeks.",
    "Could you help me carry these boxes upstairs?",
]


def test_converted_model_gives_every_output_token_the_same_log_probability(tmp_path):
    """Scores CTranslate2 gives a fixed target equal the log-probabilities of the teacher-forced pass: same
    embeddings (shared, ×√d_model), same positional encoding table, same layers, on padded batches."""
    torch.manual_seed(3)
    model = Transformer(preset("tiny")).eval()
    pieces = ["<pad>", "<unk>", "<s>", "</s>", *(f"p{i}" for i in range(4, model.config.vocab_size))]
    spec = ctranslate2_spec(model, pieces)
    spec.validate()
    spec.optimize(quantization=None)
    spec.save(str(tmp_path))
    translator = ctranslate2.Translator(str(tmp_path), device="cpu")
    sources = [[5, 6, 7, 8, 9, EOS_ID], [10, 11, EOS_ID]]
    targets = [[12, 13, 14, 15], [16, 17, 18, 19, 20, 21, 22]]
    results = translator.score_batch(
        [[pieces[i] for i in s] for s in sources], [[pieces[i] for i in t] for t in targets]
    )
    with torch.no_grad():
        target_input = pad([[BOS_ID, *t] for t in targets])
        log_probs = torch.log_softmax(model(pad(sources), target_input).logits, dim=-1)
    for row, (target, result) in enumerate(zip(targets, results, strict=True)):
        expected = [float(log_probs[row, position, token]) for position, token in enumerate([*target, EOS_ID])]
        assert result.log_probs == pytest.approx(expected, abs=1e-4)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("ct2") / "en-de"
    assert main(["ctranslate2", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("beam", [1, 4])
def test_shipped_model_translates_the_same_in_both_engines(converted, beam):
    """Greedy and beam 4: CTranslate2 over the exported folder (its own SentencePiece model) finds this project's
    translations, token for token, once its finished hypotheses are ranked with this project's length penalty."""
    loaded = load_checkpoint()
    options = GREEDY if beam == 1 else DecodingOptions(beam_size=beam)
    sources, outputs = translate_ids(loaded.model, loaded.tokenizer, SENTENCES, options)
    translator = ctranslate2.Translator(str(converted), device="cpu")
    results = translator.translate_batch(
        [loaded.tokenizer.pieces(ids) for ids in sources],
        beam_size=beam,
        num_hypotheses=beam,
        length_penalty=0.0,
        return_scores=True,
    )
    for output, result in zip(outputs, results, strict=True):
        best = max(
            zip(result.hypotheses, result.scores, strict=True),
            key=lambda item: item[1] / length_penalty(len(item[0]) + 1, options.alpha),
        )[0]
        assert best == loaded.tokenizer.pieces(output)
    assert (converted / "spm.model").read_bytes() == loaded.tokenizer.model_proto


def test_export_refuses_to_write_over_a_folder_in_use(converted, capsys):
    assert main(["ctranslate2", "--out", str(converted)]) == 1
    assert "--force" in capsys.readouterr().err
