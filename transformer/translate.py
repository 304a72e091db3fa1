"""``python -m transformer.translate`` (translate sentences): the command line is
:mod:`transformer.cli.translate`."""

if __name__ == "__main__":
    from transformer.cli.translate import main

    raise SystemExit(main())
