"""From a graph to kernel IR: fusion (scheduler.py), the lowering of formulas and views
(lowering.py), and the passes over rows of the C renderer (moments.py)."""
