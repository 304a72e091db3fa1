#!/usr/bin/env bash
# The short runs of docs/training.md ("Short runs"): from scratch, 800 steps each, every setting but one as in the
# baseline (the trainer's defaults, --branch-init-gain 0.5), health measured every 200 steps. About 35 minutes a run
# on 2 CPU cores. Each run is resumable: run the script again and finished runs are skipped, a stopped one goes on.
#
#   scripts/short_runs.sh                 # every variant, one after the other, into runs/short/<name>
#   scripts/short_runs.sh accumulate2     # only the named ones
#   python benchmarks/health_runs.py runs/short/*/metrics.jsonl=… --out docs/health_runs_short.png
#
# Variants: baseline; accumulate2 (two batches per update: twice the tokens per step); warmup4000 (the paper's
# warm-up); lr2x (twice the peak rate); dropout0 (no dropout); no_tatoeba (without the two Tatoeba corpora:
# long sentences only); no_synthetic (without the back- and forward-translated corpora).
set -euo pipefail
cd "$(dirname "$0")/.."
D=${TRANSFORMER_DATA:-../shared/data/en-de}
STEPS=${STEPS:-800}
OUT=${OUT:-runs/short}
TATOEBA=("$D/train/tatoeba" "$D/train/tatoeba_extra:2")
REST=("$D/train/multi30k:3" "$D/train/news:2" "$D/train/news_2021_2023" "$D/train/wiki_postedit" "$D/train/chat"
      "$D/train/pud" "$D/train/wmt_sample")
SYNTHETIC=("$D/train/synthetic_bt" "$D/train/synthetic_fwd")

variant() {  # name → the trainer options that differ from the baseline, and the corpora
    case "$1" in
        baseline)     echo "";;
        accumulate2)  echo "--accumulate 2";;
        warmup4000)   echo "--warmup 4000";;
        lr2x)         echo "--lr-scale 0.8";;
        dropout0)     echo "--dropout 0";;
        no_tatoeba)   echo "";;
        no_synthetic) echo "";;
        *) echo "unknown variant $1" >&2; return 1;;
    esac
}

corpora() {
    case "$1" in
        no_tatoeba)   echo "${REST[*]} ${SYNTHETIC[*]}";;
        no_synthetic) echo "${TATOEBA[*]} ${REST[*]}";;
        *)            echo "${TATOEBA[*]} ${REST[*]} ${SYNTHETIC[*]}";;
    esac
}

names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(baseline accumulate2 warmup4000 lr2x dropout0 no_tatoeba no_synthetic)
for name in "${names[@]}"; do
    extra=$(variant "$name")
    run=$OUT/$name
    if [[ -d $run/checkpoints ]] && ls "$run/checkpoints" | grep -q "step-$(printf '%07d' "$STEPS")$"; then
        echo "$name: done"
        continue
    fi
    resume=()
    [[ -d $run/checkpoints ]] && [[ -n $(ls -A "$run/checkpoints") ]] && resume=(--resume)
    echo "$name: ${extra:-(baseline)}"
    # shellcheck disable=SC2046,SC2086
    python -m transformer train --out "$run" "${resume[@]}" --preset small \
        --spm checkpoints/en-de-small/spm.model --train $(corpora "$name") --dev "$D/dev/newstest2013" \
        --warmup 1000 --lr-scale 0.4 --eval-every 200 --dev-loss-sentences 500 --dev-bleu-sentences 50 \
        --max-steps "$STEPS" --seed 0 $extra
done
