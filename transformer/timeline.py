"""``python -m transformer.timeline`` (the paper's figure measures across a run's snapshots): the command line is
:mod:`transformer.cli.timeline`."""

if __name__ == "__main__":
    from transformer.cli.timeline import main

    raise SystemExit(main())
