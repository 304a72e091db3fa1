"""The app's model sharing: many sessions on one loaded checkpoint.

- :mod:`transformer.serving.translator`: :class:`~transformer.serving.translator.Translator`, the queue in front of
  a shared model that searches the sentences waiting for it together, and
  :func:`~transformer.serving.translator.scratch_model`, a private copy for work that changes a model;
- :mod:`transformer.serving.process`: the child process a translator searches in, so that pages render meanwhile
  (``python -m transformer.serving.process CHECKPOINT``).
"""
