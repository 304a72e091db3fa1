"""``python -m transformer.align`` (word alignment from the cross-attention, scored against gold links): the
command line is :mod:`transformer.cli.align`."""

if __name__ == "__main__":
    from transformer.cli.align import main

    raise SystemExit(main())
