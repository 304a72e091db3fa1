"""The tabs of the *What if* page (``pages/what_if.py``), one module each (:class:`pages.tabs.Tab`), with what they
share in ``shared``. The page shows :data:`TABS` in this order."""

from pages.what_if_tabs import ablate, beam, compare, forced, importance, rollout

TABS = (ablate.TAB, importance.TAB, rollout.TAB, beam.TAB, forced.TAB, compare.TAB)
