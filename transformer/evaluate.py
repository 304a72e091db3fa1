"""``python -m transformer.evaluate`` (score a checkpoint on a test set): the command line is
:mod:`transformer.cli.evaluate`."""

if __name__ == "__main__":
    from transformer.cli.evaluate import main

    raise SystemExit(main())
