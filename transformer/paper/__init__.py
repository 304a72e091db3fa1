"""The paper's model (Vaswani et al., 2017): its configuration and presets, the encoder–decoder with attention
returned on request (§3), the label-smoothed loss (§5.4), the learning-rate schedule (§5.3), the subword tokenizer
and the data it reads, in batches of about the same length (§5.1). Everything else stands on this floor."""
