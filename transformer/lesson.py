"""``python -m transformer.lesson check|export`` (lessons: a path through the app, and a lesson as one web page that
opens with nothing installed): the command line is :mod:`transformer.cli.lesson`."""

if __name__ == "__main__":
    from transformer.cli.lesson import main

    raise SystemExit(main())
