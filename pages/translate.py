"""The main page, *Translate and explore*, as the navigation runs it (:mod:`pages.navigation`); the page itself is
:mod:`pages.explore`. A server's first visit sees the page's title and sentence box while the model code loads
(:func:`pages.navigation.first_paint`)."""

from __future__ import annotations

from pages import explore

explore.main()
