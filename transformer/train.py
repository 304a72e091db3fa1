"""``python -m transformer.train`` (train a model): the command line is
:mod:`transformer.cli.train`."""

if __name__ == "__main__":
    from transformer.cli.train import main

    raise SystemExit(main())
