// Pieces into words, and words linked by attention: transformer/paper/tokenizer.py (join_pieces, word_groups) and
// transformer/analysis/word_alignment.py (word_scores, links) for the browser.

import { argmax } from "./search.js";

export const WORD_START = "\u2581";
const SPECIAL = new Set(["<pad>", "<unk>", "<s>", "</s>"]);
const PUNCTUATION = /^\p{P}+$/u;
// What transformer/paper/tokenizer.py's clean() removes: bidirectional embedding, override and isolate controls.
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/g;

export function clean(text) {
  return text.toWellFormed().replace(BIDI_CONTROLS, "");
}

function byteValue(piece) {
  if (piece.length === 6 && piece.startsWith("<0x") && piece.endsWith(">")) {
    const value = parseInt(piece.slice(3, 5), 16);
    return Number.isNaN(value) ? null : value;
  }
  return null;
}

// Pieces joined into text as written: byte-fallback pieces decoded (invalid UTF-8 shown as U+FFFD), ▁ kept.
export function joinPieces(pieces) {
  const decoder = new TextDecoder("utf-8");
  let text = "";
  let pending = [];
  const flush = () => {
    if (pending.length) text += decoder.decode(new Uint8Array(pending));
    pending = [];
  };
  for (const piece of pieces) {
    const value = byteValue(piece);
    if (value !== null) {
      pending.push(value);
      continue;
    }
    flush();
    text += piece;
  }
  flush();
  return text;
}

// Piece positions grouped into words: a new word at ▁, at a special token and at a piece of punctuation only.
export function wordGroups(pieces) {
  const groups = [];
  let previousSpecial = true;
  pieces.forEach((piece, position) => {
    const special = SPECIAL.has(piece);
    const text = joinPieces([piece.replace(/^\u2581+/, "")]);
    const punctuation = text.length > 0 && PUNCTUATION.test(text);
    if (special || previousSpecial || punctuation || piece.startsWith(WORD_START)) groups.push([position]);
    else groups[groups.length - 1].push(position);
    previousSpecial = special;
  });
  return groups;
}

// Words of a piece sequence and the word of each piece.
export function wordsOf(pieces) {
  const words = [];
  const owners = [];
  wordGroups(pieces).forEach((group, index) => {
    words.push(joinPieces(group.map((i) => pieces[i])).replaceAll(WORD_START, " ").trim());
    for (let i = 0; i < group.length; i++) owners.push(index);
  });
  return { words, owners };
}

// A piece as a label: ▁ shown as a space marker, byte pieces decoded.
export function label(piece) {
  const value = byteValue(piece);
  if (value !== null) return piece;
  return piece.replaceAll(WORD_START, "\u2009");
}

// method: {layer, head (null: average), shift, both}. cross: [L][H][T][S] rows of the translation's pass, the last
// source piece being </s>. Returns [German words][English words] (rows averaged over a German word's pieces,
// columns summed over an English word's pieces).
export function wordScores(cross, method, sourceOwners, targetOwners, englishCount, germanCount) {
  const layers = method.layer === null ? cross : [cross[method.layer]];
  const rowsCount = cross[0][0].length;
  const sourcePieces = sourceOwners.length;
  const average = [];
  for (let t = 0; t < rowsCount; t++) {
    const row = new Float64Array(cross[0][0][0].length);
    let count = 0;
    for (const layer of layers) {
      const heads = method.head === null ? layer : [layer[method.head]];
      for (const head of heads) {
        head[t].forEach((value, s) => (row[s] += value));
        count++;
      }
    }
    average.push(row.map((value) => value / count));
  }
  const rows = method.shift ? average.slice(1) : average.slice(0, -1);
  const scores = Array.from({ length: germanCount }, () => new Float64Array(englishCount));
  const counts = new Float64Array(germanCount);
  targetOwners.forEach((german, piece) => {
    if (piece >= rows.length) return;
    for (let s = 0; s < sourcePieces; s++) scores[german][sourceOwners[s]] += rows[piece][s];
    counts[german] += 1;
  });
  return scores.map((row, german) => row.map((value) => value / Math.max(counts[german], 1)));
}

// Each German word linked to the English word it attends to most (with `both`, only where that German word is also
// the English word's strongest): sorted [english, german] pairs.
export function links(scores, method, englishCount) {
  if (!scores.length || !englishCount) return [];
  let found = scores.map((row, german) => [argmax(row), german]);
  if (method.both) {
    const strongest = [];
    for (let e = 0; e < englishCount; e++) strongest.push(argmax(scores.map((row) => row[e])));
    found = found.filter(([english, german]) => strongest[english] === german);
  }
  return found.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

export function parseMethod(name) {
  const match = /^(?:L(\d+)(?:H(\d+))?|(mean))(-shift)?(-both)?$/.exec(name);
  if (!match) return { layer: null, head: null, shift: false, both: true, name: "mean-both" };
  return {
    layer: match[3] ? null : Number(match[1]) - 1,
    head: match[2] ? Number(match[2]) - 1 : null,
    shift: Boolean(match[4]),
    both: Boolean(match[5]),
    name,
  };
}
