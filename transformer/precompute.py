"""``python -m transformer.precompute`` (every measurement the figure pages need, stored beside a checkpoint): the
command line is :mod:`transformer.cli.precompute`."""

if __name__ == "__main__":
    from transformer.cli.precompute import main

    raise SystemExit(main())
