"""The trainer's parts, by concern; ``python -m transformer train`` runs them.

- :mod:`~transformer.cli.training.options`: the typed training configuration, its command line and how a resumed run
  restores its own settings;
- :mod:`~transformer.cli.training.state`: starting, resuming and fine-tuning through
  :mod:`transformer.formats.checkpoint` (weights, optimizer, random state, data position);
- :mod:`~transformer.cli.training.validation`: the losses, and dev loss, BLEU, sample translations and health;
- :mod:`~transformer.cli.training.runtime`: processes, signals, the metrics log, batch prefetching, the optimizer.
"""
