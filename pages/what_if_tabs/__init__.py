"""The tabs of the *What if* page (``pages/what_if.py``), one module each, with what they share in ``shared``."""
