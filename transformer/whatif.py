"""``python -m transformer.whatif`` (switch heads off, trace, search, force, compare): the command line is
:mod:`transformer.cli.whatif`."""

if __name__ == "__main__":
    from transformer.cli.whatif import main

    raise SystemExit(main())
