"""What the heads do, measured: one sentence's attention maps and word merging (``attention``), per-head scores
over a sample (``heads``), the paper figures' numbers (``figures``), their replay over training (``timeline``),
measurements stored beside a checkpoint (``precompute``) and input checks (``input_check``). NumPy and the model
only: no plotting, no Streamlit."""
