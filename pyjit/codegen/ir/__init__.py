"""The loop-level kernel IR (kernel_ir.py) and its index expressions (index.py)."""
