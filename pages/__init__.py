"""The Streamlit app's pages (``app.py`` is the router) and what they share: ``common`` (the checkpoint they show,
the sidebar, figure downloads) and ``url_state`` (choices that hold across tabs and pages, and links that reproduce
a view)."""
