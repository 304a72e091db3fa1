"""The shipped model exported as a Hugging Face MarianMTModel (python -m transformer export huggingface), measured
against this project's model on the same sentences:

- token ids: Marian's tokenizer against the project's SentencePiece wrapper;
- a teacher-forced pass: largest logit difference, and largest difference over all 144 attention maps;
- translations: transformers' ``generate`` greedy and beam 4 against this project's search (greedy and beam 4);
- speed: the app's attention pass (a teacher-forced pass returning every map) through transformers (eager attention,
  ``output_attentions=True``) against the native one, one sentence at a time.

    python benchmarks/hub_round_trip.py --sentences 200 [--checkpoint DIR]

Beam search: transformers divides a hypothesis's log-probability by length^α, this project by GNMT's
((5 + length) / 6)^α (the paper's α = 0.6); the two agree where the length penalty does not change the ranking.
The script reports beam 4 both with each side's own penalty at α = 0.6 and with the penalty off on both sides
(α = 0, where both searches rank by log-probability alone).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from transformer.formats.checkpoint import load_checkpoint
from transformer.formats.hub.export import export_marian
from transformer.search.decode import beam_search, greedy_decode

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "en-de" / "test" / "tatoeba_new.en"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--source", type=Path, default=DATA)
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    import transformers

    transformers.logging.set_verbosity_error()
    loaded = load_checkpoint(arguments.checkpoint)
    sentences = arguments.source.read_text(encoding="utf-8").splitlines()[: arguments.sentences]
    with tempfile.TemporaryDirectory() as folder:
        out = export_marian(loaded, Path(folder) / "marian")
        tokenizer = transformers.AutoTokenizer.from_pretrained(out, local_files_only=True)
        hf = transformers.AutoModelForSeq2SeqLM.from_pretrained(
            out, local_files_only=True, attn_implementation="eager"
        ).eval()
    same_ids = logits = attention = 0.0
    agree = {"greedy": 0, "beam 4, α = 0.6": 0, "beam 4, α = 0": 0}
    native_seconds, hf_seconds = [], []
    model = loaded.model
    for sentence in sentences:
        ids = [*loaded.tokenizer.encode(sentence), loaded.config.eos_id]
        hf_ids = tokenizer(sentence).input_ids
        same_ids += ids == hf_ids
        source = torch.tensor([ids])
        limit = len(ids) + 50
        with torch.no_grad():
            greedy = greedy_decode(model, source)[0]
            ours = {
                "greedy": greedy,
                "beam 4, α = 0.6": beam_search(model, source, 4, alpha=0.6)[0],
                "beam 4, α = 0": beam_search(model, source, 4, alpha=0.0)[0],
            }
            settings = {
                "greedy": {"num_beams": 1},
                "beam 4, α = 0.6": {"num_beams": 4, "length_penalty": 0.6, "early_stopping": True},
                "beam 4, α = 0": {"num_beams": 4, "length_penalty": 0.0, "early_stopping": True},
            }
            for name, options in settings.items():
                found = hf.generate(source, do_sample=False, max_new_tokens=limit, **options)[0].tolist()
                found = [token for token in found[1:] if token not in (0, loaded.config.eos_id)]
                agree[name] += found == ours[name]
            target = torch.tensor([[loaded.config.bos_id, *greedy]])
            start = time.perf_counter()
            native = model(source, target, need_weights=True)
            native_seconds.append(time.perf_counter() - start)
            start = time.perf_counter()
            theirs = hf(input_ids=source, decoder_input_ids=target, output_attentions=True)
            hf_seconds.append(time.perf_counter() - start)
        logits = max(logits, float((native.logits - theirs.logits).abs().max()))
        pairs = (
            (native.encoder_attention, theirs.encoder_attentions),
            (native.decoder_attention, theirs.decoder_attentions),
            (native.cross_attention, theirs.cross_attentions),
        )
        for mine, hf_maps in pairs:
            for layer, hf_map in enumerate(hf_maps):
                attention = max(attention, float((mine[:, layer] - hf_map).abs().max()))
    count = len(sentences)
    version = transformers.__version__
    print(f"{count} sentences of {arguments.source.name}, {arguments.threads} threads, transformers {version}")
    print(f"token ids identical: {int(same_ids)}/{count}")
    print(f"teacher-forced logits: largest difference {logits:.2e}; attention (all 144 maps): {attention:.2e}")
    for name, count_same in agree.items():
        print(f"same translation, {name}: {count_same}/{count}")
    native_ms, hf_ms = statistics.median(native_seconds) * 1e3, statistics.median(hf_seconds) * 1e3
    print(
        f"attention pass, median per sentence: native {native_ms:.1f} ms, transformers {hf_ms:.1f} ms "
        f"({hf_ms / native_ms:.2f}x)"
    )


if __name__ == "__main__":
    main()
