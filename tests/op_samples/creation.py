"""Sample rows of pyjit/ops/creation.py."""

SAMPLES = {}
