// The project's search (transformer/search/decode.py) over a step function, with nothing of the browser in it, so that node
// can check it too. `step(sequences)` returns, for each sequence of ids (each starting with <s>), the
// log-probabilities of its next token as one Float32Array of length V.
//
// Greedy: the most probable token at each step, until </s> or the length limit (source length + 50).
// Beam: beam 4, GNMT length penalty ((5 + |Y|) / 6)^α, the best 2·K continuations weighed at each step, ending
// once no live hypothesis can beat the best finished one (tensor2tensor's rule), as transformer/search/decode.py does.

export const EXTRA_OUTPUT_TOKENS = 50;

export function outputLimit(sourceLength, maxPositions) {
  return Math.min(sourceLength + EXTRA_OUTPUT_TOKENS, maxPositions - 1);
}

export function lengthPenalty(length, alpha) {
  return Math.pow((5 + length) / 6, alpha);
}

// <pad> and <s> are never emitted; at the first step only the forced first token (a target-language token) may be.
function restrict(logProbs, config, step) {
  logProbs[config.pad_id] = -Infinity;
  logProbs[config.bos_id] = -Infinity;
  if (step === 1 && config.forced_first_id >= 0) {
    logProbs.fill(-Infinity);
    logProbs[config.forced_first_id] = 0;
  }
  return logProbs;
}

export function argmax(values) {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

export async function greedy(step, config, limit) {
  const sequence = [config.bos_id];
  for (let position = 1; position <= limit; position++) {
    const [logProbs] = await step([sequence]);
    let token = argmax(restrict(logProbs, config, position));
    if (position >= limit) token = config.eos_id;
    if (token === config.eos_id) break;
    sequence.push(token);
  }
  return sequence.slice(1);
}

// The `count` best (score, index) pairs of `scores`, best first; among equal scores the lower index first.
function top(scores, count) {
  const best = [];
  for (let i = 0; i < scores.length; i++) {
    const score = scores[i];
    if (best.length === count && !(score > best[best.length - 1][0])) continue;
    let at = best.length;
    while (at > 0 && score > best[at - 1][0]) at--;
    best.splice(at, 0, [score, i]);
    if (best.length > count) best.pop();
  }
  return best;
}

export async function beam(step, config, limit, beams = 4, alpha = 0.6) {
  let sequences = [[config.bos_id]];
  let scores = [0];
  const finished = [];
  for (let position = 1; position <= limit; position++) {
    const live = scores.flatMap((score, k) => (score === -Infinity ? [] : [k]));
    const rows = await step(live.map((k) => sequences[k]));
    const vocab = rows[0].length;
    const candidates = new Float32Array(beams * vocab).fill(-Infinity);
    rows.forEach((logProbs, row) => {
      const k = live[row];
      restrict(logProbs, config, position);
      if (position >= limit) {
        const end = logProbs[config.eos_id];
        logProbs.fill(-Infinity);
        logProbs[config.eos_id] = end;
      }
      for (let v = 0; v < vocab; v++) candidates[k * vocab + v] = scores[k] + logProbs[v];
    });
    const ranked = top(candidates, 2 * beams);
    const penalty = lengthPenalty(position, alpha);
    const alive = [];
    ranked.forEach(([score, index], rank) => {
      const origin = Math.floor(index / vocab);
      const token = index % vocab;
      if (token === config.eos_id) {
        if (rank < beams && score !== -Infinity) finished.push([score / penalty, sequences[origin].slice(1)]);
      } else {
        alive.push([score, origin, token]);
      }
    });
    while (alive.length < beams) alive.push([-Infinity, 0, config.pad_id]);
    alive.length = beams;
    if (position >= limit) break;
    if (finished.length) {
      const largest = Math.max(lengthPenalty(position + 1, alpha), lengthPenalty(limit, alpha));
      const bar = Math.max(...finished.map(([score]) => score));
      if (alive[0][0] / largest < bar) break;
    }
    sequences = alive.map(([, origin, token]) => [...sequences[origin], token]);
    scores = alive.map(([score]) => score);
  }
  if (!finished.length) return [];
  let best = finished[0];
  for (const item of finished) if (item[0] > best[0]) best = item;
  return best[1];
}
