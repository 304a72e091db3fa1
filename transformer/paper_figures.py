"""``python -m transformer.paper_figures`` (the paper's Figures 3–5 redrawn on a model): the command line is
:mod:`transformer.cli.paper_figures`."""

if __name__ == "__main__":
    from transformer.cli.paper_figures import main

    raise SystemExit(main())
