"""pyjit/frontend/functionalise.py: in-place updates of the compiled code's inputs (augmented
operators, Tensor methods, item assignment, ufunc `out=`) are functional ops in one graph,
and the inputs get the new values written back after the graph runs. Each case compares
the compiled run with the plain one: the results and the inputs it leaves."""

import numpy as np
import pytest
from frontend.test_interpreter import same

import pyjit
from pyjit.utils import counters

BACKENDS = pyjit.list_backends(exclude_tags=None)


def graphs() -> int:
    return counters["stats"]["unique_graphs"]


def breaks() -> dict:
    return dict(counters["graph_break"])


@pytest.fixture(autouse=True)
def fresh():
    pyjit.reset()
    counters.clear()
    yield
    pyjit.reset()
    counters.clear()


def check_twice(fn, make_args, backend="eager"):
    """fn compiled and plain on fresh copies of the same arguments, twice (the second
    call reuses the entry): same results, same inputs afterwards."""
    compiled = pyjit.compile(fn, backend=backend)
    for _ in range(2):
        got_args, want_args = make_args(), make_args()
        got, want = compiled(*got_args), fn(*want_args)
        assert same(got, want)
        for got_arg, want_arg in zip(got_args, want_args):
            assert same(got_arg, want_arg)


def updates_everything(x, y, mask, index):
    x += y
    x[0] = 7.0
    x[mask] = -1.0
    x[index] = y[:2]
    np.multiply(x, 2.0, out=x)
    y[1:3] = x[1:3] * 0.5
    return x.sum() + y.sum()


def updated_args():
    x, y = np.arange(6.0), np.linspace(0, 1, 6)
    return x, y, x > 3.5, np.array([5, 1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_updates_of_inputs_are_one_graph_and_written_back(backend):
    check_twice(updates_everything, updated_args, backend)
    assert graphs() == 1 and not breaks()


def test_the_graph_is_functional_and_returns_the_new_values():
    compiled = pyjit.compile(updates_everything, backend="eager")
    compiled(*updated_args())
    ((_, code),) = pyjit.cache_entries(compiled)
    graph_module = next(const.graph_module for const in code.co_consts if hasattr(const, "graph_module"))
    names = [node.target.name for node in graph_module.graph.calls()]
    assert names.count("index_put") == 4 and "add" in names and "multiply" in names
    assert len(graph_module.graph.output_node.args[0]) == 3  # the sum and the new x and y


class Model:
    def __init__(self):
        self.total = np.zeros(3)


COUNTS = np.zeros(3, dtype=np.int64)


def into_attribute_and_global(model, x):
    model.total += x
    COUNTS[:] += 1
    return model.total * 2


def test_attributes_and_globals_are_written_back():
    compiled = pyjit.compile(into_attribute_and_global, backend="eager")
    model, plain = Model(), Model()
    for _ in range(3):
        assert same(compiled(model, np.ones(3)), into_attribute_and_global(plain, np.ones(3)))
    assert same(model.total, plain.total) and same(COUNTS, np.full(3, 6))
    assert graphs() == 1 and not breaks()


def add_then_read(x, y):
    x += 1
    return x + y


@pytest.mark.parametrize("backend", BACKENDS)
def test_aliased_inputs_give_numpys_answer(backend):
    compiled = pyjit.compile(add_then_read, backend=backend)
    assert same(compiled(np.zeros(4), np.ones(4)), np.full(4, 2.0))  # compiled for distinct arrays
    assert graphs() == 1
    for make in (lambda: (lambda a: (a, a))(np.zeros(4)),  # the same array twice
                 lambda: (lambda a: (a[:4], a[2:]))(np.arange(6.0))):  # overlapping views
        got_args, want_args = make(), make()
        assert same(compiled(*got_args), add_then_read(*want_args))
        assert same(got_args[0].base if got_args[0].base is not None else got_args[0],
                    want_args[0].base if want_args[0].base is not None else want_args[0])


@pytest.mark.parametrize("make", [lambda: (lambda a: (a, a))(np.zeros(4)),
                                  lambda: (np.full(4, -1.0), np.ones(4)),
                                  lambda: (lambda a: (a, np.ones(4)))(np.zeros(4)[::-1].copy())],
                         ids=["aliased", "fresh-arrays", "copies"])
def test_the_guards_of_an_update_reject_only_aliased_inputs(make):
    compiled = pyjit.compile(add_then_read, backend="eager")
    compiled(np.zeros(4), np.ones(4))
    args = make()
    assert same(compiled(*args), add_then_read(*make()))
    missed = graphs() > 1
    assert missed == (args[0] is args[1])


def test_the_guards_of_an_update_reject_a_read_only_input():
    compiled = pyjit.compile(add_then_read, backend="eager")
    compiled(np.zeros(4), np.ones(4))
    read_only = np.zeros(4)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        compiled(read_only, np.ones(4))
    assert same(read_only, np.zeros(4))
    x = np.zeros(4)
    assert same(compiled(x, np.ones(4)), np.full(4, 2.0)) and same(x, np.ones(4))
    assert [key for key in breaks() if "read-only" in key]  # the read-only call ran the update in Python
    assert len(pyjit.cache_entries(compiled)) == 2 and graphs() == 1  # a writeable call reuses the first


def two_updates(x, y):
    x += 1
    y += 1
    return x + y


def test_a_read_only_input_raises_numpys_error_as_numpy_does():
    def args():
        read_only = np.zeros(3)
        read_only.flags.writeable = False
        return np.zeros(3), read_only

    compiled = pyjit.compile(two_updates, backend="eager")
    got, want = args(), args()
    with pytest.raises(ValueError, match="read-only") as plain:
        two_updates(*want)
    with pytest.raises(ValueError, match="read-only") as compiled_error:
        compiled(*got)
    assert str(compiled_error.value) == str(plain.value)
    assert same(got[0], want[0]) and same(got[1], want[1])


def test_an_error_inside_the_graph_leaves_the_inputs_unchanged():
    def f(x, index):
        x += 1
        return x[index]

    compiled = pyjit.compile(f, backend="eager")
    x = np.zeros(3)
    assert same(compiled(x, np.array([0, 2])), np.ones(2)) and same(x, np.ones(3))
    with pytest.raises(IndexError):
        compiled(x, np.array([0, 5]))  # NumPy raises inside the graph, before anything is written
    assert same(x, np.ones(3)) and graphs() == 1


def test_item_assignment_into_computed_arrays_is_captured():
    def f(a, index):
        x = a * 2
        x[1] = 0.0
        x[index] += 3.0  # integer-array indexing: a copy, then assigned back
        x[..., :1] = a[:, 1:2]
        return x

    check_twice(f, lambda: (np.arange(12.0).reshape(3, 4), np.array([2, 0])))
    assert graphs() == 1 and not breaks()


def test_an_item_assignment_numpy_refuses_raises_numpys_error():
    def f(x, v):
        x[0:2] = v
        return x

    compiled = pyjit.compile(f, backend="eager")
    x = np.zeros(4)
    with pytest.raises(ValueError, match="could not broadcast"):
        compiled(x, np.ones(3))
    assert same(x, np.zeros(4))


def test_ufunc_out_returns_the_out_array():
    def f(a, b, out):
        result = np.add(a, b, out=out)
        np.subtract(result, 1.0, out)
        return result

    compiled = pyjit.compile(f, backend="eager")
    a, b, out = np.ones(3), np.arange(3.0), np.empty(3)
    assert compiled(a, b, out) is out and same(out, np.arange(3.0))
    assert graphs() == 1 and not breaks()


def test_ufunc_out_that_numpy_refuses_raises_numpys_error():
    def f(a, out):
        return np.add(a, 1.5, out=out)

    compiled = pyjit.compile(f, backend="eager")
    out = np.zeros(3, dtype=np.int64)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        compiled(np.ones(3), out)
    assert same(out, np.zeros(3, dtype=np.int64))


# -- Tensors ------------------------------------------------------------------------------------
def sgd_step(params, grads, lr):
    with pyjit.no_grad():
        for p, g in zip(params, grads):
            p -= lr * g
            p.add_(g, alpha=-lr)


def sgd_step_inside(params, grads, lr):
    with pyjit.no_grad():
        sgd_step(params, grads, lr)


def sgd_step(params, grads, lr):
    for p, g in zip(params, grads):
        p -= lr * g
        p.add_(g, alpha=-lr)


def sgd_args():
    params = [pyjit.tensor(np.full(3, 1.0), requires_grad=True), pyjit.tensor(np.arange(4.0), requires_grad=True)]
    return params, [pyjit.tensor(np.full(3, 0.5)), pyjit.tensor(np.ones(4))]


def check_sgd(compiled, step):
    (got, grads), (want, want_grads) = sgd_args(), sgd_args()
    versions = [p._version for p in got]
    for _ in range(3):
        compiled(got, grads, 0.1)
        step(want, want_grads, 0.1)
    for p, q in zip(got, want):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-15)
        assert p.requires_grad and p.grad_fn is None
    assert all(p._version > version for p, version in zip(got, versions))


@pytest.mark.parametrize("backend", BACKENDS)
def test_optimizer_updates_under_no_grad_are_captured_and_written_back(backend):
    with pyjit.no_grad():
        check_sgd(pyjit.compile(sgd_step, backend=backend), sgd_step)
    # (inductor's first call under no_grad also counts breaks in its own generated code)
    assert graphs() == 1 and not [key for key in breaks() if "in-place" in key or "sgd_step" in key]


def test_optimizer_updates_inside_a_no_grad_block_are_one_graph():
    check_sgd(pyjit.compile(sgd_step_inside, backend="eager"), sgd_step_inside)
    assert graphs() == 1  # the body of the `with` (entered at a break)
    assert not [key for key in breaks() if "in-place" in key]


def test_an_update_of_a_leaf_that_requires_grad_raises_the_tapes_error():
    def f(w):
        w += 1
        return w

    w = pyjit.tensor(np.arange(3.0), requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        pyjit.compile(f, backend="aot_eager")(w)
    assert same(w.numpy(), np.arange(3.0))


def test_an_update_of_a_non_leaf_input_gives_the_tapes_gradient():
    def f(h, v):
        h.mul_(v)
        return (h * h).sum()

    def run(fn):
        w = pyjit.tensor(np.arange(3.0), requires_grad=True)
        h = w * 2
        out = fn(h, pyjit.tensor(np.full(3, 3.0)))
        out.backward()
        return out.item(), h.numpy(), w.grad.numpy()

    got, want = run(pyjit.compile(f, backend="aot_eager")), run(f)
    assert got[0] == want[0] and same(got[1], want[1]) and same(got[2], want[2])


def test_a_saved_tensor_updated_by_a_compiled_call_before_backward_raises_the_tapes_error():
    def update(x):
        x += 1

    x, w = pyjit.tensor(np.ones(3)), pyjit.tensor(np.ones(3), requires_grad=True)
    out = (x * w).sum()  # the tape saves x
    pyjit.compile(update, backend="eager")(x)
    assert graphs() == 1 and same(x.numpy(), np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


# -- what the graph returns -----------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_outputs_that_alias_each_other_come_back_aliased(backend):
    def f(a):
        y = a + 1
        y += 1
        return y, y.T, y[0], y

    y, transposed, row, again = pyjit.compile(f, backend=backend)(np.ones((2, 3)))
    assert np.shares_memory(y, transposed) and np.shares_memory(y, row) and again is y


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_of_an_updated_input_shares_the_inputs_memory(backend):
    def f(x):
        x += 1
        return x.T

    x = np.ones((2, 3))
    view = pyjit.compile(f, backend=backend)(x)
    view[0, 0] = 5.0
    assert x[0, 0] == 5.0 and x.sum() == 15.0


def test_an_array_updated_by_a_tensor_stays_an_array_or_raises_as_plain():
    def assign(a, t):
        x = a * 2
        x[0] = t[0]
        return x

    def add(a, t):
        x = a * 2
        x += t
        return x

    a, t = np.ones(3), pyjit.tensor(np.arange(3.0))
    assert same(pyjit.compile(assign, backend="eager")(a, t), assign(a, t))
    with pytest.raises(TypeError) as plain:
        add(a, t)
    with pytest.raises(TypeError) as compiled:
        pyjit.compile(add, backend="eager")(a, t)
    assert str(compiled.value) == str(plain.value)


def test_an_update_through_a_held_view_breaks_and_shows_through_it():
    def f(x):
        row = x[0]
        row += 1  # the view is held: the update must reach x through it
        x[1] += row
        return x

    check_twice(f, lambda: (np.arange(6.0).reshape(3, 2),))
    assert any("a view, or an array a view was taken of" in key for key in breaks())


@pytest.mark.parametrize("update", ["w[0] += 1", "w[0] = 1.0", "w.sub_(1)"])
def test_updates_of_a_leaf_that_requires_grad_raise_what_the_tape_raises(update):
    namespace = {}
    exec(f"def f(w):\n    {update}\n    return w\n", namespace)
    f = namespace["f"]
    with pytest.raises(RuntimeError) as plain:
        f(pyjit.tensor(np.arange(3.0), requires_grad=True))
    w = pyjit.tensor(np.arange(3.0), requires_grad=True)
    with pytest.raises(RuntimeError) as compiled:
        pyjit.compile(f, backend="aot_eager")(w)
    assert str(compiled.value) == str(plain.value) and same(w.numpy(), np.arange(3.0))
