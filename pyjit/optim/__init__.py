"""Optimizers written on pyjit.Tensor, with torch.optim's names and update formulas."""

from .adam import Adam
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Adam", "Optimizer", "SGD"]
