#!/usr/bin/env bash
# Train the small model from scratch on a GPU for a fixed number of minutes, average its last checkpoints, export
# them as fp16 in shards small enough for a transfer with a per-file limit, and evaluate them.
#
#   scripts/gpu_train.sh pack             # here: copy the corpora into gpu_pack/ (git-ignored) so that they travel
#   scripts/gpu_train.sh train            # on the GPU machine: train, average, export to $OUT/model, evaluate
#
# Settings (environment): MINUTES (training time, default 6), DEVICE (cuda), AMP (bf16), BATCH_TOKENS (32768 per
# side), LR_SCALE (0.5), WARMUP (1000), DROPOUT (0.2), GAIN (the --branch-init-gain, 0.5; from scratch only), SAVE_MINUTES (0.5),
# AVERAGE (4), SHARD_MB (15), EVAL_LIMIT (sentences per test set; empty: all), OUT (where results go, default
# runs/gpu-out), PRESET (small; from scratch only), TRAIN (corpus specs relative to the data folder; default: every training corpus,
# in-domain ones up-sampled), INIT_FROM (a checkpoint to continue instead of starting from scratch, for example
# checkpoints/en-de-small: its weights and vocabulary, a fresh optimizer, WARMUP steps of warm-up; empty: from
# scratch), EXTRA (further trainer arguments, for example "--case-augment 0.2 --max-tokens 128"). The end-to-end check on a CPU, one minute of training:
#
#   MINUTES=1 DEVICE=cpu AMP=none BATCH_TOKENS=2048 EVAL_LIMIT=20 scripts/gpu_train.sh train
set -euo pipefail
cd "$(dirname "$0")/.."
PACK=gpu_pack/en-de

if [[ "${1:-}" == "pack" ]]; then
    source_data=${TRANSFORMER_DATA:-../shared/data/en-de}
    rm -rf gpu_pack && mkdir -p "$PACK"
    cp -r "$source_data"/train "$source_data"/dev "$source_data"/test "$PACK"/
    chmod -R u+w gpu_pack
    du -sh gpu_pack
    exit 0
fi
[[ "${1:-}" == "train" ]] || { echo "usage: $0 pack|train" >&2; exit 2; }
[[ -d "$PACK/train" ]] || { echo "error: $PACK/train missing: run '$0 pack' first (and carry gpu_pack)" >&2; exit 1; }

export TRANSFORMER_DATA=$PACK PYTHONUNBUFFERED=1
PYTHON=${PYTHON:-python3}
OUT=${OUT:-runs/gpu-out}
RUN=${RUN:-runs/gpu}
T=$PACK/train
DEFAULT_TRAIN="$T/tatoeba $T/tatoeba_extra:2 $T/multi30k:3 $T/news:2 $T/news_2021_2023 $T/wiki_postedit $T/chat $T/pud"
DEFAULT_TRAIN+=" $T/wmt_sample $T/synthetic_bt $T/synthetic_fwd"
read -r -a train_specs <<< "${TRAIN:-$DEFAULT_TRAIN}"
read -r -a extra <<< "${EXTRA:-}"
mkdir -p "$OUT"
rm -rf "$RUN"
"$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"

if [[ -n "${INIT_FROM:-}" ]]; then
    start=(--init-from "$INIT_FROM")
else
    start=(--preset "${PRESET:-small}" --spm checkpoints/en-de-small/spm.model --branch-init-gain "${GAIN:-0.5}")
fi
"$PYTHON" -m transformer train --out "$RUN" "${start[@]}" --device "${DEVICE:-cuda}" \
    --amp "${AMP:-bf16}" --train "${train_specs[@]}" \
    --dev "$PACK/dev/newstest2013" --batch-tokens "${BATCH_TOKENS:-32768}" --lr-scale "${LR_SCALE:-0.5}" \
    --warmup "${WARMUP:-1000}" --dropout "${DROPOUT:-0.2}" \
    --max-hours "$("$PYTHON" -c "print(${MINUTES:-6} / 60)")" --save-every-minutes "${SAVE_MINUTES:-0.5}" \
    --keep-last "${AVERAGE:-4}" --eval-every "${EVAL_EVERY:-1000}" --dev-bleu-sentences 200 --log-every 100 \
    --progress lines ${extra[@]+"${extra[@]}"} 2>&1 | tee "$OUT/train.log"

"$PYTHON" -m transformer checkpoint average "$RUN" --last "${AVERAGE:-4}" --out "$OUT/model" --fp16 \
    --shard-mb "${SHARD_MB:-15}"
ls -l "$OUT/model"

limit=()
[[ -n "${EVAL_LIMIT:-}" ]] && limit=(--limit "$EVAL_LIMIT")
for test_set in test/tatoeba_new test/multi30k_test2016 test/newstest2014; do
    "$PYTHON" -m transformer evaluate --checkpoint "$OUT/model" --src "$PACK/$test_set.en" --ref "$PACK/$test_set.de" \
        --beam 4 --device "${DEVICE:-cuda}" --record --json "${limit[@]}" | tee -a "$OUT/eval.jsonl"
done
