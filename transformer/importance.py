"""``python -m transformer.importance`` (measure how much each head matters): the command line is
:mod:`transformer.cli.importance`."""

if __name__ == "__main__":
    from transformer.cli.importance import main

    raise SystemExit(main())
