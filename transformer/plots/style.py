"""What every figure shares: the font, and labels that show user text as text."""

from __future__ import annotations

import html

FONT = {"size": 12}


def safe_label(token: str) -> str:
    """A token as plotly shows it literally: ``&``, ``<`` and ``>`` escaped, since plotly parses labels as HTML."""
    return html.escape(token, quote=False)
