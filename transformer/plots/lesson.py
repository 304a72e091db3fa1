"""A lesson as one self-contained web page: its texts, questions and figures (with their data) and plotly's
JavaScript inline, so that the file opens from disk or any static web server with no Python and no network.

The page shows one step at a time (previous / next, the keyboard's arrows and Page Up / Page Down, ``#3`` in the
address opens step 3); a step's figures are drawn when the step is first shown, and a step with a question keeps
them hidden until the question is answered and revealed.

With the one-file explorer inside (:mod:`transformer.features.web`), a step whose view is a sentence's attention heads
gets *Try your own sentence*: the explorer opens under the step on the step's sentence, attention kind, layer and head,
and translates whatever the student types there, in the browser.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from transformer.features.i18n import message
from transformer.features.lessons import Lesson

STYLE = """
body { font-family: system-ui, sans-serif; margin: 0; color: #262730; background: #fff; }
header { padding: 0.8rem 2rem; border-bottom: 1px solid #ddd; display: flex; gap: 1rem; align-items: baseline; }
header h1 { font-size: 1.3rem; margin: 0; flex: 1; }
main { max-width: 1100px; margin: 0 auto; padding: 1rem 2rem 3rem; }
.step { display: none; } .step.shown { display: block; }
.step h2 { font-size: 1.5rem; } .text { font-size: 1.1rem; line-height: 1.55; }
.question { background: #f0f2f6; border-radius: 0.5rem; padding: 0.8rem 1rem; margin: 1rem 0; }
.question label { display: block; margin: 0.3rem 0; }
.answer { background: #e8f0fe; padding: 0.6rem 1rem; border-radius: 0.5rem; }
.figures.hidden, .answer.hidden { display: none; } .note { color: #666; font-style: italic; }
nav { display: flex; gap: 0.6rem; align-items: center; }
button { font-size: 1rem; padding: 0.4rem 0.9rem; cursor: pointer; }
button.primary { background: #ff4b4b; color: white; border: none; border-radius: 0.4rem; }
.figure { margin: 1rem 0; }
.try { margin: 0.6rem 0; }
iframe.explorer { width: 100%; height: 80vh; border: 1px solid #ddd; border-radius: 0.5rem; margin-top: 0.5rem; }
"""

SCRIPT = """
const steps = [...document.querySelectorAll('.step')];
let current = 0;
function draw(step) {
  if (step.classList.contains('drawn') || step.querySelector('.figures.hidden')) return;
  step.classList.add('drawn');
  for (const holder of step.querySelectorAll('.figure')) {
    const figure = JSON.parse(holder.querySelector('script').textContent);
    const div = document.createElement('div');
    holder.appendChild(div);
    Plotly.newPlot(div, figure.data, figure.layout, {displaylogo: false, responsive: true});
  }
}
function show(index) {
  current = Math.max(0, Math.min(steps.length - 1, index));
  steps.forEach((step, i) => step.classList.toggle('shown', i === current));
  document.getElementById('position').textContent =
    POSITION.replace('{number}', current + 1).replace('{total}', steps.length);
  document.getElementById('previous').disabled = current === 0;
  document.getElementById('next').disabled = current === steps.length - 1;
  history.replaceState(null, '', '#' + (current + 1));
  const box = document.getElementById('explorer-box');
  if (box) box.hidden = true;
  draw(steps[current]);
}
function reveal(button) {
  const step = button.closest('.step');
  step.querySelector('.figures').classList.remove('hidden');
  const answer = step.querySelector('.answer');
  if (answer) answer.classList.remove('hidden');
  button.remove();
  draw(step);
}
document.getElementById('previous').onclick = () => show(current - 1);
document.getElementById('next').onclick = () => show(current + 1);
document.addEventListener('keydown', (event) => {
  if (event.target.tagName === 'INPUT') return;
  if (event.key === 'ArrowRight' || event.key === 'PageDown') show(current + 1);
  if (event.key === 'ArrowLeft' || event.key === 'PageUp') show(current - 1);
});
show((parseInt(location.hash.slice(1), 10) || 1) - 1);
let explorer = null;
function tryOwn(button) {
  const request = Object.assign({type: 'explorer-show'}, JSON.parse(button.dataset.view));
  const box = document.getElementById('explorer-box');
  if (!explorer) {
    explorer = document.createElement('iframe');
    explorer.className = 'explorer';
    explorer.title = button.textContent;
    explorer.pending = request;
    explorer.onload = () => { explorer.loaded = true; explorer.contentWindow.postMessage(explorer.pending, '*'); };
    const source = document.getElementById('explorer-html').textContent;
    explorer.srcdoc = source.replaceAll('<\u2060/script', '</script');
    box.appendChild(explorer);
  }
  box.hidden = false;
  explorer.pending = request;
  if (explorer.loaded) explorer.contentWindow.postMessage(request, '*');
  box.scrollIntoView({behavior: 'smooth', block: 'start'});
}
"""


def _paragraphs(text: str) -> str:
    return "".join(f"<p>{html.escape(part)}</p>" for part in text.split("\n\n") if part.strip())


def lesson_html(
    lesson: Lesson,
    figures: Sequence[Sequence[go.Figure]],
    notes: Sequence[str | None],
    language: str,
    explorer: str | None = None,
    tries: Sequence[dict | None] | None = None,
) -> str:
    """The whole page: ``figures[i]`` are step i's figures, ``notes[i]`` a line shown instead where a view has no
    figure in the file (None: nothing). ``explorer``: the one-file explorer as
    :func:`transformer.features.web.embeddable` text, and ``tries[i]`` the sentence and head step i opens it on ({text,
    kind, layer, head}; None: no button)."""
    say = lambda key, **values: message(language, key, **values)  # noqa: E731
    sections = []
    for number, (step, step_figures, note) in enumerate(zip(lesson.steps, figures, notes, strict=True), 1):
        parts = [f"<h2>{html.escape(step.words('title', language))}</h2>"]
        parts.append(f"<div class='text'>{_paragraphs(step.words('text', language))}</div>")
        hidden = ""
        if step.question is not None:
            hidden = " hidden"
            question = [f"<div class='question'><b>{html.escape(say('lesson.question'))}</b> "]
            question.append(html.escape(step.words("question", language)))
            for choice in step.words("choices", language) or []:
                question.append(f"<label><input type='radio' name='answer-{number}'> {html.escape(choice)}</label>")
            reveal = html.escape(say("lesson.reveal"))
            question.append(f"<p><button class='primary reveal' onclick='reveal(this)'>{reveal}</button></p>")
            if step.answer is not None:
                question.append(f"<div class='answer hidden'>{html.escape(step.words('answer', language))}</div>")
            question.append("</div>")
            parts.append("".join(question))
        holders = [
            f"<div class='figure'><script type='application/json'>{_figure_json(figure)}</script></div>"
            for figure in step_figures
        ]
        if note:
            holders.append(f"<p class='note'>{html.escape(note)}</p>")
        view = tries[number - 1] if explorer is not None and tries else None
        if view is not None:
            request = html.escape(json.dumps({**view, "language": language}), quote=True)
            label = html.escape(say("lesson.try_own"))
            holders.append(
                f"<div class='try'><button type='button' data-view=\"{request}\" onclick='tryOwn(this)'>{label}"
                "</button></div>"
            )
        parts.append(f"<div class='figures{hidden}'>{''.join(holders)}</div>")
        sections.append(f"<section class='step' id='step-{number}'>{''.join(parts)}</section>")
    position = json.dumps(say("lesson.step_of", number="{number}", total="{total}"))
    explorer_box = "" if explorer is None else "<div id='explorer-box' hidden></div>"
    embedded = "" if explorer is None else f'<script type="text/html" id="explorer-html">{explorer}</script>\n'
    return f"""<!DOCTYPE html>
<html lang="{language}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(lesson.words("title", language))}</title>
<style>{STYLE}</style>
<script>{get_plotlyjs()}</script>
</head><body>
<header><h1>{html.escape(lesson.words("title", language))}</h1>
<nav><button id="previous">← {html.escape(say("lesson.previous"))}</button><span id="position"></span>
<button id="next" class="primary">{html.escape(say("lesson.next"))} →</button></nav></header>
<main>{"".join(sections)}{explorer_box}</main>
<script>const POSITION = {position};{SCRIPT}</script>
{embedded}</body></html>
"""


def _figure_json(figure: go.Figure) -> str:
    """A figure as JSON that is safe inside a ``<script>`` element."""
    return figure.to_json().replace("</", "<\\/")
