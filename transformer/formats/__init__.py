"""A model's files: the native checkpoint folder (safetensors, config, tokenizer) and its checks before anything is
allocated; training runs, averaging and export; Hugging Face Marian/M2M100 folders opened as this project's model;
and the CTranslate2 conversion."""
