"""``python -m transformer.dictionary`` (the English→German dictionary the cross-attention alignment scores use): the
command line is :mod:`transformer.cli.dictionary`."""

if __name__ == "__main__":
    from transformer.cli.dictionary import main

    raise SystemExit(main())
