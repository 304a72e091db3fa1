"""The encoder–decoder Transformer of "Attention Is All You Need", its trainer, decoder and attention analysis."""

__version__ = "0.1.0"
