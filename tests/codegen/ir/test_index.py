"""pyjit/codegen/ir/index.py: index polynomials, their division atoms and folding."""

from pyjit.codegen.ir.index import FloorDiv, Index, Mod
from pyjit.graph import ShapeEnv

name = Index.name


def test_index_arithmetic_normalizes_polynomials():
    i, s = name("i0"), name("s0")
    assert (i * s + 3) - (s * i) == Index.const(3)
    assert (i + 1) * (i - 1) == i * i - 1
    assert str(4 * i * s + 2 * i - 7) == "-7 + 2*i0 + 4*i0*s0"
    assert Index.const(5) == 5 and hash(i + 0) == hash(i)
    assert (i * 0).constant_value() == 0 and (i + 1).constant_value() is None


def test_an_index_from_a_symbolic_size_keeps_symbol_names_and_divides_exactly():
    env = ShapeEnv()
    s0 = env.create_symbol(4)
    assert Index.of(s0 * 3 + 1) == 3 * name("s0") + 1
    half = Index.of((s0 * 2) // 4)  # s0/2: a rational coefficient
    assert half == name("s0").floordiv(2)
    assert Index.of(7) == 7


def test_floordiv_and_mod_simplify_what_they_can():
    i = name("i0")
    assert (4 * i + 8).floordiv(4) == i + 2
    assert (4 * i).mod(4) == 0
    assert i.floordiv(1) == i and i.mod(1) == 0
    assert Index.const(17).floordiv(5) == 3 and Index.const(17).mod(5) == 2
    atom = (i + 1).floordiv(name("s0"))
    assert atom == Index({(FloorDiv(i + 1, name("s0")),): 1})
    assert isinstance(next(iter(i.mod(3).terms))[0], Mod)


def test_coefficient_finds_linear_terms_only():
    i, j, s = name("i0"), name("i1"), name("s1")
    index = i * s + j * 4 + 2
    assert index.coefficient("i0") == s and index.coefficient("i1") == 4
    assert index.coefficient("i2") == 0
    assert (i * i).coefficient("i0") is None
    assert (i.floordiv(3) + i).coefficient("i0") is None  # i0 inside a division atom


def test_substitute_reaches_into_division_atoms():
    i = name("i0")
    index = (i + 2).floordiv(name("s0")) + i
    assert index.substitute({"i0": Index.const(3), "s0": Index.const(2)}) == Index.const(5)
    assert index.names() == {"i0", "s0"}


def test_adding_undoes_flattening_then_unflattening():
    """NOTE(div-mod-fold)."""
    i, size = Index.name("i0"), Index.name("s0")
    assert i.floordiv(size) * size + i.mod(size) == i
    assert 3 * i.floordiv(4) * 4 + 3 * i.mod(4) + 1 == 3 * i + 1
    assert i.mod(4) + 1 + i.floordiv(4) * 4 == i + 1  # in either order
    assert i.floordiv(4) * 3 + i.mod(4) != i  # only the exact quotient folds


def test_alternating_reshapes_keep_the_index_linear():
    """Each split of a flat index into (// d, % d) is undone by the next flattening, so
    the index of twelve reshapes is still the flat position (NOTE(div-mod-fold))."""
    row, column = Index.name("i0"), Index.name("i1")
    flat = row * 3 + column
    for step in range(12):
        width = 4 if step % 2 == 0 else 3
        flat = flat.floordiv(width) * width + flat.mod(width)
    assert flat == row * 3 + column
