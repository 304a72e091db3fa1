"""``python -m transformer.export ctranslate2|huggingface|web`` (a checkpoint for CTranslate2, as a Hugging Face
model, or as the one-file browser explorer): the command line is :mod:`transformer.cli.export`."""

if __name__ == "__main__":
    from transformer.cli.export import main

    raise SystemExit(main())
