"""Every compiled-autograd test starts and ends with no compiled graphs, counters or logs."""

import pytest

import pyjit
from pyjit.utils import counters


@pytest.fixture(autouse=True)
def fresh():
    pyjit.reset()
    counters.clear()
    yield
    pyjit.reset()
    pyjit.set_logs()
