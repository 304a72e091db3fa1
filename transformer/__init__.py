"""The encoder–decoder Transformer of "Attention Is All You Need", its trainer, decoder and attention analysis.

The package is in floors, each importing only the ones before it (``tests/test_layout.py``): ``paper`` (the model,
its configuration, loss, schedule, tokenizer and data), ``search`` (greedy and beam search on the fast engine),
``formats`` (native checkpoints, runs and export, Hugging Face folders, CTranslate2), ``features`` (messages in each
language, lessons, the tiny classroom model, the one-file explorer), ``analysis``, ``serving``, ``plots`` and
``cli``. Every command is ``python -m transformer <command>``.
"""

__version__ = "0.1.0"
