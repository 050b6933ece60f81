"""Sample rows of pyjit/ops/linalg.py."""

SAMPLES = {}
