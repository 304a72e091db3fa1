"""``python -m transformer.atlas`` (every attention head measured against gold syntax and gold alignments, beside
baselines): the command line is :mod:`transformer.cli.atlas`."""

if __name__ == "__main__":
    from transformer.cli.atlas import main

    raise SystemExit(main())
