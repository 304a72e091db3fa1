"""The search (§6.1): greedy and beam search in :mod:`~transformer.search.decode`, run on the fast engine of
:mod:`~transformer.search.fast` — the decoder packed for one new position per step, the same computation as the
reference model's :meth:`~transformer.paper.model.Transformer.decode` (tests/test_decode.py holds them equal)."""
