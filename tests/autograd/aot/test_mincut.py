"""pyjit/autograd/aot/mincut.py: the minimum s-t cut."""

from pyjit.autograd.aot.mincut import min_cut


def test_the_cut_goes_through_the_cheapest_edges():
    capacity = {("s", "a"): 10, ("s", "b"): 10, ("a", "c"): 2, ("b", "c"): 3, ("a", "b"): 1, ("c", "t"): 100}
    side = min_cut(capacity, "s", "t")
    assert side == {"s", "a", "b"}  # cutting a->c and b->c: 5, less than anything else


def test_a_bottleneck_is_cut_once():
    capacity = {("s", "a"): 7, ("a", "b"): 3, ("b", "t"): 9, ("s", "t"): 0}
    assert min_cut(capacity, "s", "t") == {"s", "a"}


def test_no_path_to_the_sink_cuts_nothing():
    assert min_cut({("s", "a"): 1}, "s", "t") == {"s", "a"}
