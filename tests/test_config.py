"""ModelConfig's attention kinds: one tuple for the whole project, and how many layers each kind has."""

from __future__ import annotations

import pytest

from transformer.analysis import attention, health, score_tables
from transformer.paper import model as model_module
from transformer.paper.config import ATTENTION_KINDS, preset
from transformer.paper.model import Transformer


def test_each_attention_kind_has_the_layers_of_its_stack():
    """Encoder and decoder of different depths, so that a kind given the other stack's count is caught; the
    counts are those of the model's own attention modules."""
    config = preset("tiny", encoder_layers=3, decoder_layers=5)
    assert {kind: config.layers(kind) for kind in ATTENTION_KINDS} == {"encoder": 3, "decoder": 5, "cross": 5}
    model = Transformer(config)
    for kind in ATTENTION_KINDS:
        assert config.layers(kind) == len(model.attention_modules(kind)), kind


@pytest.mark.parametrize("kind", ["", "Encoder", "self", "encoder-decoder"])
def test_an_unknown_attention_kind_is_refused_by_name(kind):
    with pytest.raises(ValueError, match="unknown attention kind"):
        preset("tiny").layers(kind)


def test_every_module_names_the_same_attention_kinds():
    assert ATTENTION_KINDS == ("encoder", "decoder", "cross")
    for kinds in (model_module.ATTENTION_KINDS, attention.KINDS, health.KINDS, score_tables.KINDS):
        assert kinds is ATTENTION_KINDS
