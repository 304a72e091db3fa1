"""What if: switch heads off, rank them, trace attention through the layers, open up the beam search, score your
own translation, and compare two checkpoints or two sentences — each on the loaded model and the chosen sentence.
Each tab is a module of ``pages/what_if_tabs/`` (:data:`TABS`, :class:`pages.tabs.Tab`):

- *Switch heads off*: any set of heads (output zeroed before Wᴼ, Michel et al. 2019) → the new translation beside
  the original with the differences marked, and one head's attention with and without them
  (:mod:`transformer.analysis.ablation`).
- *Head importance*: BLEU/chrF lost when each head alone is off, Michel et al.'s gradient proxy, and BLEU as the k
  least important heads go together; stored beside the checkpoint by ``python -m transformer importance --save``,
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

from pages import tabs, url_state
from pages.common import leave_page, page
from pages.decoding import current_options
from pages.i18n import decoding_label, escaped, t
from pages.models import cached_translation
from pages.sentence import follow_sentence, linked_sentence_note, sentence_input
from pages.url_state import Field
from pages.what_if_tabs import TABS
from pages.what_if_tabs.shared import Case, read_old_links

st.set_page_config(page_title=t("whatif.page_title"), page_icon="🧪", layout="wide")

TAB_KEY = "wi_tab_widget"
FIELDS = {
    "wi_text": Field(None, url_state.text(2000)),
    "wi_tab": tabs.choice(TABS),
    **tabs.fields_of(TABS),
}
# ------------------------------------------------------------------------------------------------ page
with page("what_if", FIELDS) as loaded:
    read_old_links(loaded)
    follow_sentence("wi_text")
    st.title(t("whatif.page_title"))
    st.caption(t("whatif.intro"))
    text = sentence_input(t("whatif.sentence"), "wi_text", t("whatif.type_sentence")) or leave_page()
    linked_sentence_note("wi_text")
    options = current_options()
    translation = cached_translation(loaded, text, options)
    st.markdown(
        t("whatif.translation", translation=escaped(translation.translation) or "∅", decoding=decoding_label(options))
    )

    tabs.show(TABS, "wi_tab", TAB_KEY, Case(loaded, text, translation, options))
