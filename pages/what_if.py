"""What if: switch heads off, rank them, trace attention through the layers, open up the beam search, score your
own translation, and compare two checkpoints or two sentences — each on the loaded model and the chosen sentence.
Each tab is a module of ``pages/what_if_tabs/``:

- *Switch heads off*: any set of heads (output zeroed before Wᴼ, Michel et al. 2019) → the new translation beside
  the original with the differences marked, and one head's attention with and without them
  (:mod:`transformer.analysis.ablation`).
- *Head importance*: BLEU/chrF lost when each head alone is off, Michel et al.'s gradient proxy, and BLEU as the k
  least important heads go together; stored beside the checkpoint by ``python -m transformer.importance --save``,
  or measured here on a few dev sentences.
- *Rollout and flow*: Abnar & Zuidema's (2020) attention rollout and flow for the encoder, and a rollout through
  cross-attention to the source words, beside raw attention (:mod:`transformer.analysis.rollout`).
- *Beam search*: the search's tree, its n-best list, and each token's probability with the alternatives
  (:mod:`transformer.analysis.beam`).
- *Forced decoding*: a given German sentence scored teacher-forced beside the model's own
  (:mod:`transformer.analysis.forced`).
- *Side by side*: two checkpoints (a training-step snapshot is a checkpoint folder too) on one sentence, or two
  sentences on one checkpoint, the same view on both sides and their difference where the shapes match.
"""

from __future__ import annotations

import streamlit as st

from pages import url_state
from pages.common import DEFAULT_SENTENCE, cached_translation, current_options, page_checkpoint, save_page
from pages.i18n import decoding_label, t
from pages.url_state import Field
from pages.what_if_tabs import ablate, beam, compare, forced, importance, rollout
from pages.what_if_tabs.compare import MODES
from pages.what_if_tabs.importance import IMPORTANCE_SAMPLE, MEASURES
from transformer.analysis.attention import KINDS

st.set_page_config(page_title=t("whatif.page_title"), page_icon="🧪", layout="wide")

TABS = ("ablate", "importance", "rollout", "beam", "forced", "compare")
TAB_KEY = "wi_tab_widget"
VIEW_PREFIXES = ("", "beam_", "forced_", "compare_")
FIELDS = {
    "wi_text": Field(None, url_state.text(2000)),
    "wi_tab": Field(TABS[0], url_state.choice(TABS)),
    **{f"wi_off_{kind}": Field([], url_state.integers(0, 4095), url_state.dump_integers) for kind in KINDS},
    # The view (kind, 1-based layer and head) of the ablation, beam, forced-decoding and side-by-side tabs; without
    # a link's choice, the loaded model's clearest head (head_pickers).
    **{
        f"wi_{prefix}{name}": field
        for prefix in VIEW_PREFIXES
        for name, field in (
            ("kind", Field(None, url_state.choice(KINDS))),
            ("layer", Field(None, url_state.integer(1, 64))),
            ("head", Field(None, url_state.integer(1, 64))),
        )
    },
    "wi_measure": Field(MEASURES[0], url_state.choice(MEASURES)),
    "wi_sample": Field(10, url_state.integer(*IMPORTANCE_SAMPLE)),
    "wi_k": Field(0, url_state.integer(0, 4096)),
    "wi_residual": Field(0.5, url_state.number(0.0, 0.9)),
    "wi_roll_layer": Field(6, url_state.integer(1, 64)),
    "wi_flow": Field(False, url_state.flag, url_state.dump_flag),
    "wi_hypothesis": Field(0, url_state.integer(0, 64)),
    "wi_given": Field("", url_state.text(2000)),
    "wi_mode": Field(MODES[0], url_state.choice(MODES)),
    "wi_other": Field(None),
    "wi_other_path": Field("", url_state.text(1000)),
    "wi_other_text": Field("The Law will never be perfect, but its application should be just.", url_state.text(2000)),
}


# ------------------------------------------------------------------------------------------------ page
loaded = page_checkpoint("what_if", FIELDS)
url_state.ensure("wi_text", st.session_state.get("text") or DEFAULT_SENTENCE)
st.title(t("whatif.page_title"))
st.caption(t("whatif.intro"))
text = st.text_input(t("whatif.sentence"), key="wi_text", max_chars=2000).strip()
if not text:
    st.info(t("whatif.type_sentence"))
    save_page(FIELDS)
    st.stop()
options = current_options()
translation = cached_translation(str(loaded.path), text, options, loaded)
st.markdown(t("whatif.translation", translation=translation.translation or "∅", decoding=decoding_label(options)))

renders = {
    "ablate": lambda: ablate.render(loaded, text, translation, options),
    "importance": lambda: importance.render(loaded),
    "rollout": lambda: rollout.render(loaded, text, translation),
    "beam": lambda: beam.render(loaded, text, options),
    "forced": lambda: forced.render(loaded, text, translation, options),
    "compare": lambda: compare.render(loaded, text, translation, options),
}
for name, tab in url_state.tabs("wi_tab", {tab: t(f"whatif.tab_{tab}") for tab in TABS}, TAB_KEY).items():
    if tab.open:
        with tab:
            renders[name]()
save_page(FIELDS)
