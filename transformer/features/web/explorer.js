// The one-file explorer: the model (two ONNX graphs and their shared weights, run by onnxruntime-web in
// WebAssembly), its SentencePiece model (run by sentencepiece compiled to WebAssembly) and the page, all read from
// the file itself; nothing is fetched.
import * as ort from "onnxruntime-web/wasm";
import { SentencePieceProcessor } from "@sctg/sentencepiece-js";
import { beam, greedy, outputLimit } from "./search.js";
import { clean, label, links, parseMethod, wordScores, wordsOf } from "./words.js";

const KINDS = ["encoder", "decoder", "cross"];
const $ = (id) => document.getElementById(id);
const data = JSON.parse($("explorer-data").textContent);
const config = data.config;
let language = data.language;
let model = null; // {encoder, decoder, tokenizer}
let current = null; // the translation on show
const state = { text: "", kind: "cross", layer: 0, head: 0, search: "beam", query: null };

function t(key, values = {}) {
  const text = data.strings[language][key] ?? data.strings.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(values[name] ?? ""));
}

function bytes(id) {
  const text = $(id).textContent.trim();
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

async function gunzip(compressed) {
  const stream = new Blob([compressed]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function load() {
  const started = performance.now();
  ort.env.wasm.numThreads = 1; // threads need a cross-origin-isolated page, which file:// is not
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmBinary = await gunzip(bytes("ort-wasm"));
  const weights = bytes("weights");
  const options = { executionProviders: ["wasm"], externalData: [{ path: "weights.bin", data: weights }] };
  const encoder = await ort.InferenceSession.create(bytes("encoder-onnx"), options);
  const decoder = await ort.InferenceSession.create(bytes("decoder-onnx"), options);
  const tokenizer = new SentencePieceProcessor();
  await tokenizer.loadFromB64StringModel($("spm-model").textContent.trim());
  model = { encoder, decoder, tokenizer };
  return performance.now() - started;
}

function tensor(ids, rows) {
  const width = ids.length / rows;
  return new ort.Tensor("int64", BigInt64Array.from(ids, (id) => BigInt(id)), [rows, width]);
}

// Source ids ending with </s>: the text cleaned as the Python tokenizer cleans it, cut to 2,000 characters and
// then to the explorer's source limit (as the app's pages).
export function encodeSource(text) {
  const characters = Array.from(text);
  const cutCharacters = characters.length > data.max_characters;
  const kept = cutCharacters ? characters.slice(0, data.max_characters).join("") : text;
  const ids = model.tokenizer.encodeIds(clean(kept));
  const cutTokens = ids.length + 1 > data.max_source_tokens;
  return {
    ids: [...ids.slice(0, data.max_source_tokens - 1), config.eos_id],
    cutCharacters,
    cutTokens,
  };
}

async function encode(sourceIds) {
  const out = await model.encoder.run({ source: tensor(sourceIds, 1) });
  return { memory: out.memory, attention: out.encoder_attention };
}

function repeatRows(memory, rows) {
  const [, length, width] = memory.dims;
  const values = new Float32Array(rows * length * width);
  for (let r = 0; r < rows; r++) values.set(memory.data, r * length * width);
  return new ort.Tensor("float32", values, [rows, length, width]);
}

async function decode(sourceIds, memory, sequences) {
  const rows = sequences.length;
  const source = tensor(Array(rows).fill(sourceIds).flat(), rows);
  const target = tensor(sequences.flat(), rows);
  return model.decoder.run({ source, memory: repeatRows(memory, rows), target });
}

function stepper(sourceIds, memory) {
  return async (sequences) => {
    const out = await decode(sourceIds, memory, sequences);
    const vocab = out.log_probs.dims[1];
    return sequences.map((_, row) => out.log_probs.data.slice(row * vocab, (row + 1) * vocab));
  };
}

// [dims...] flat array → nested arrays of the first `depth` dimensions over Float32Array rows.
function nest(array, dims) {
  if (dims.length === 1) return array;
  const size = dims.slice(1).reduce((a, b) => a * b, 1);
  return Array.from({ length: dims[0] }, (_, i) => nest(array.subarray(i * size, (i + 1) * size), dims.slice(1)));
}

export async function translate(text, searches = ["beam", "greedy"]) {
  const source = encodeSource(text);
  const started = performance.now();
  const { memory, attention } = await encode(source.ids);
  const limit = outputLimit(source.ids.length, config.max_positions);
  const step = stepper(source.ids, memory);
  const outputs = {};
  for (const search of searches) {
    outputs[search] = search === "beam" ? await beam(step, config, limit, 4, 0.6) : await greedy(step, config, limit);
  }
  const maps = {};
  const raw = { encoder: attention.data };
  for (const search of searches) {
    const sequence = [config.bos_id, ...outputs[search]];
    const out = await decode(source.ids, memory, [sequence]);
    const [L, , H, T] = out.self_attention.dims;
    const S = source.ids.length;
    raw[search] = { decoder: out.self_attention.data, cross: out.cross_attention.data };
    maps[search] = {
      decoder: nest(out.self_attention.data, [L, H, T, T]),
      cross: nest(out.cross_attention.data, [L, H, T, S]),
    };
  }
  const L = attention.dims[0];
  const S = source.ids.length;
  return {
    text,
    source,
    outputs,
    encoder: nest(attention.data, [L, config.num_heads, S, S]),
    maps,
    raw,
    milliseconds: performance.now() - started,
  };
}

function pieces(ids) {
  return ids.map((id) => data.pieces[id] ?? "<unk>");
}

function detokenize(ids) {
  return clean(model.tokenizer.decodeIds(ids.filter((id) => id > config.eos_id)));
}

// ---------------------------------------------------------------------------------------------------- the page

const SVG = "http://www.w3.org/2000/svg";
function svg(name, attributes = {}, parent = null) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (parent) parent.appendChild(element);
  return element;
}

function element(name, attributes = {}, text = null) {
  const node = document.createElement(name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

// Blues, light to dark (the app's colour scale for weights).
function colour(weight) {
  const w = Math.max(0, Math.min(1, weight));
  const light = [247, 251, 255];
  const dark = [8, 48, 107];
  const mix = light.map((value, i) => Math.round(value + (dark[i] - value) * Math.sqrt(w)));
  return `rgb(${mix.join(",")})`;
}

function tokensOf(kind) {
  const sourceTokens = pieces(current.source.ids).map(label);
  const output = current.outputs[state.search];
  const decoderInputs = pieces([config.bos_id, ...output]).map(label);
  if (kind === "encoder") return { queries: sourceTokens, keys: sourceTokens };
  if (kind === "decoder") return { queries: decoderInputs, keys: decoderInputs };
  return { queries: decoderInputs, keys: sourceTokens };
}

function weightsOf(kind) {
  return kind === "encoder" ? current.encoder : current.maps[state.search][kind];
}

// The element `id`, emptied to be drawn again.
function emptied(id) {
  const box = $(id);
  box.replaceChildren();
  return box;
}

// The chosen head's weights, its queries and keys, and the emptied box `id` to draw it in.
function chosenHead(id) {
  return { box: emptied(id), weights: weightsOf(state.kind)[state.layer][state.head], ...tokensOf(state.kind) };
}

function drawHeatmap() {
  const { box, weights, queries, keys } = chosenHead("heatmap");
  const cell = Math.max(10, Math.min(26, Math.floor(560 / Math.max(keys.length, queries.length))));
  const margin = 90;
  const width = margin + cell * keys.length + 10;
  const height = margin + cell * queries.length + 10;
  const root = svg("svg", { width, height, role: "img", "aria-label": headTitle() }, box);
  keys.forEach((token, k) => {
    const x = margin + k * cell + cell / 2;
    svg("text", { x, y: margin - 6, transform: `rotate(-60 ${x} ${margin - 6})`, class: "tick" }, root).textContent =
      token;
  });
  queries.forEach((token, q) => {
    const text = svg("text", { x: margin - 6, y: margin + q * cell + cell * 0.7, class: "tick end" }, root);
    text.textContent = token;
    weights[q].forEach((weight, k) => {
      const rect = svg(
        "rect",
        { x: margin + k * cell, y: margin + q * cell, width: cell, height: cell, fill: colour(weight) },
        root,
      );
      svg("title", {}, rect).textContent = `${token} → ${keys[k]}: ${weight.toFixed(3)}`;
    });
  });
}

function drawLines() {
  const { box, weights, queries, keys } = chosenHead("lines");
  const row = 20;
  const height = row * Math.max(queries.length, keys.length) + 20;
  const root = svg("svg", { width: 420, height, role: "img", "aria-label": t("web.lines_title") }, box);
  const left = 150;
  const right = 270;
  const lines = svg("g", {}, root);
  queries.forEach((_, q) => {
    weights[q].forEach((weight, k) => {
      if (weight < 0.02) return;
      const line = svg(
        "line",
        {
          x1: left,
          y1: 20 + q * row - 5,
          x2: right,
          y2: 20 + k * row - 5,
          stroke: "#08306b",
          "stroke-width": 2,
          "stroke-opacity": weight,
        },
        lines,
      );
      line.dataset.query = q;
    });
  });
  const focus = (q) => {
    for (const line of lines.children) line.style.display = q === null || Number(line.dataset.query) === q ? "" : "none";
  };
  queries.forEach((token, q) => {
    const text = svg("text", { x: left - 8, y: 20 + q * row, class: "token end", tabindex: 0 }, root);
    text.textContent = token;
    text.addEventListener("mouseenter", () => focus(q));
    text.addEventListener("focus", () => focus(q));
    text.addEventListener("mouseleave", () => focus(null));
    text.addEventListener("blur", () => focus(null));
  });
  keys.forEach((token, k) => {
    svg("text", { x: right + 8, y: 20 + k * row, class: "token" }, root).textContent = token;
  });
}

function drawGrid() {
  const box = emptied("grid");
  const all = weightsOf(state.kind);
  all.forEach((layer, l) => {
    const line = element("div", { class: "grid-row" });
    line.appendChild(element("span", { class: "grid-label" }, t("web.layer_short", { layer: l + 1 })));
    layer.forEach((weights, h) => {
      const size = 56;
      const canvas = element("canvas", {
        width: size,
        height: size,
        tabindex: 0,
        role: "button",
        "aria-label": t("web.head_label", { layer: l + 1, head: h + 1 }),
        title: t("web.head_label", { layer: l + 1, head: h + 1 }),
        class: l === state.layer && h === state.head ? "chosen" : "",
      });
      const context = canvas.getContext("2d");
      const rows = weights.length;
      const columns = weights[0].length;
      for (let q = 0; q < rows; q++) {
        for (let k = 0; k < columns; k++) {
          context.fillStyle = colour(weights[q][k]);
          context.fillRect((k * size) / columns, (q * size) / rows, size / columns + 0.5, size / rows + 0.5);
        }
      }
      const open = () => {
        state.layer = l;
        state.head = h;
        render();
      };
      canvas.addEventListener("click", open);
      canvas.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          open();
        }
      });
      line.appendChild(canvas);
    });
    box.appendChild(line);
  });
}

function drawAlignment() {
  const box = emptied("alignment");
  const method = parseMethod(data.alignment_method);
  const english = wordsOf(pieces(current.source.ids.slice(0, -1)));
  const output = current.outputs[state.search];
  const german = wordsOf(pieces(output));
  const scores = wordScores(
    current.maps[state.search].cross,
    method,
    english.owners,
    german.owners,
    english.words.length,
    german.words.length,
  );
  const found = links(scores, method, english.words.length);
  $("alignment-caption").textContent = t("web.alignment_caption", { method: method.name });
  const list = element("ul", { class: "links" });
  for (const [e, g] of found) list.appendChild(element("li", {}, `${german.words[g]} → ${english.words[e]}`));
  if (!found.length) list.appendChild(element("li", {}, t("web.no_links")));
  box.appendChild(list);
}

function headTitle() {
  return t("web.head_title", { kind: t(`kind.${state.kind}`), layer: state.layer + 1, head: state.head + 1 });
}

function writeHash() {
  const parameters = new URLSearchParams({
    text: state.text,
    kind: state.kind,
    layer: state.layer + 1,
    head: state.head + 1,
    search: state.search,
    lang: language,
  });
  try {
    history.replaceState(null, "", `#${parameters}`);
  } catch {
    // a page with no address of its own (a lesson's embedded explorer) keeps its state in memory only
  }
}

function readHash() {
  const parameters = new URLSearchParams(location.hash.slice(1));
  const number = (name, count) => {
    const value = Number(parameters.get(name));
    return Number.isInteger(value) && value >= 1 && value <= count ? value - 1 : 0;
  };
  state.text = parameters.get("text") ?? "";
  state.kind = KINDS.includes(parameters.get("kind")) ? parameters.get("kind") : "cross";
  state.layer = number("layer", config.encoder_layers);
  state.head = number("head", config.num_heads);
  state.search = parameters.get("search") === "greedy" ? "greedy" : "beam";
  if (Object.hasOwn(data.strings, parameters.get("lang") ?? "")) language = parameters.get("lang");
}

function fillText() {
  document.documentElement.lang = language;
  for (const node of document.querySelectorAll("[data-t]")) node.textContent = t(node.dataset.t);
  for (const node of document.querySelectorAll("[data-t-placeholder]"))
    node.placeholder = t(node.dataset.tPlaceholder);
  document.title = t("web.title");
  for (const button of document.querySelectorAll("#languages button"))
    button.setAttribute("aria-pressed", String(button.dataset.language === language));
}

function fillChoices() {
  const layers = state.kind === "encoder" ? config.encoder_layers : config.decoder_layers;
  state.layer = Math.min(state.layer, layers - 1);
  const fill = (select, count, key, chosen) => {
    select.replaceChildren(
      ...Array.from({ length: count }, (_, i) => {
        const option = element("option", { value: i }, t(key, { number: i + 1 }));
        option.selected = i === chosen;
        return option;
      }),
    );
  };
  fill($("layer"), layers, "web.layer_option", state.layer);
  fill($("head"), config.num_heads, "web.head_option", state.head);
  for (const button of document.querySelectorAll("#kinds button")) {
    button.textContent = t(`kind.${button.dataset.kind}`);
    button.setAttribute("aria-pressed", String(button.dataset.kind === state.kind));
  }
  for (const input of document.querySelectorAll("input[name=search]")) input.checked = input.value === state.search;
}

function render() {
  fillText();
  fillChoices();
  writeHash();
  if (!current) return;
  $("results").hidden = false;
  $("beam-output").textContent = detokenize(current.outputs.beam);
  $("greedy-output").textContent = detokenize(current.outputs.greedy);
  const notes = [];
  if (current.source.cutCharacters) notes.push(t("web.cut_characters", { count: data.max_characters }));
  if (current.source.cutTokens) notes.push(t("web.cut_tokens", { count: data.max_source_tokens }));
  $("notes").textContent = notes.join(" ");
  $("head-title").textContent = headTitle();
  drawHeatmap();
  drawLines();
  drawGrid();
  drawAlignment();
  $("timing").textContent = t("web.timing", { milliseconds: Math.round(current.milliseconds) });
}

function status(message, error = false) {
  $("status").textContent = message;
  $("status").className = error ? "status error" : "status";
}

async function submit() {
  const text = $("sentence").value;
  if (!text.trim()) {
    status(t("web.empty"), true);
    return;
  }
  if (!model) return;
  state.text = text;
  $("translate").disabled = true;
  status(t("web.translating"));
  try {
    current = await translate(text);
    status("");
  } catch (error) {
    status(t("web.failed", { error: String(error) }), true);
  } finally {
    $("translate").disabled = false;
  }
  render();
}

function wire() {
  $("translate").addEventListener("click", submit);
  $("sentence").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      submit();
    }
  });
  for (const button of document.querySelectorAll("#kinds button")) {
    button.addEventListener("click", () => {
      state.kind = button.dataset.kind;
      render();
    });
  }
  $("layer").addEventListener("change", () => {
    state.layer = Number($("layer").value);
    render();
  });
  $("head").addEventListener("change", () => {
    state.head = Number($("head").value);
    render();
  });
  for (const input of document.querySelectorAll("input[name=search]")) {
    input.addEventListener("change", () => {
      state.search = input.value;
      render();
    });
  }
  for (const button of document.querySelectorAll("#languages button")) {
    button.addEventListener("click", () => {
      if (Object.hasOwn(data.strings, button.dataset.language)) language = button.dataset.language;
      render();
    });
  }
}

// A lesson that embeds the explorer shows a step's sentence and head: {text, kind, layer, head} (layer and head from
// 1), translated as soon as the model is ready.
function listen() {
  window.addEventListener("message", (event) => {
    // Only the page that embeds this one may steer it: no other window that opens or frames a copy.
    if (window.parent === window || event.source !== window.parent) return;
    const request = event.data;
    if (!request || request.type !== "explorer-show") return;
    state.kind = KINDS.includes(request.kind) ? request.kind : state.kind;
    const layers = state.kind === "encoder" ? config.encoder_layers : config.decoder_layers;
    const within = (value, count) => Math.min(count, Math.max(1, Math.trunc(Number(value)) || 1)) - 1;
    state.layer = within(request.layer, layers);
    state.head = within(request.head, config.num_heads);
    if (Object.hasOwn(data.strings, String(request.language))) language = request.language;
    state.text = String(request.text ?? "");
    $("sentence").value = state.text;
    render();
    if (model && state.text.trim()) submit();
  });
}

async function main() {
  readHash();
  wire();
  listen();
  fillText();
  fillChoices();
  $("sentence").value = state.text || data.example;
  if (typeof WebAssembly !== "object") {
    status(t("web.no_webassembly"), true);
    return;
  }
  status(t("web.loading"));
  try {
    const milliseconds = await load();
    window.explorer.readyMilliseconds = milliseconds;
  } catch (error) {
    status(t("web.load_failed", { error: String(error) }), true);
    return;
  }
  status("");
  $("translate").disabled = false;
  document.body.dataset.ready = "true";
  if (state.text) await submit();
}

// What a visitor does, timed: the sentence typed, translated with both searches and every view drawn.
async function run(text) {
  const started = performance.now();
  $("sentence").value = text;
  await submit();
  return performance.now() - started;
}

// For tests and benchmarks: the search and the maps without the page, and the page's own path.
window.explorer = {
  translate,
  run,
  encodeIds: (text) => model.tokenizer.encodeIds(clean(text)),
  detokenize,
  encodeSource: (text) => encodeSource(text),
  state,
};
main();
