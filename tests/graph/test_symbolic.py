"""pyjit/graph/symbolic.py: size symbols, their arithmetic, and the guards comparisons record."""

import pytest

from pyjit.graph import ShapeEnv, ShapeGuard, SymInt


@pytest.fixture
def env():
    return ShapeEnv()


def test_create_symbol_names_symbols_in_order_and_keeps_hint_and_source(env):
    s0 = env.create_symbol(4, "x.shape[0]")
    s1 = env.create_symbol(6, "y.shape[1]")
    assert (str(s0), str(s1)) == ("s0", "s1")
    assert (s0.hint, s1.hint) == (4, 6)
    assert env.hints == {"s0": 4, "s1": 6}
    assert env.sources == {"s0": "x.shape[0]", "s1": "y.shape[1]"}
    assert env.guards == []


@pytest.mark.parametrize("hint", [0, 1])
def test_create_symbol_refuses_sizes_zero_and_one(env, hint):
    with pytest.raises(ValueError, match="static"):
        env.create_symbol(hint)
    assert env.hints == {}


def test_addition_subtraction_and_multiplication_build_polynomials(env):
    s0, s1 = env.create_symbol(4), env.create_symbol(6)
    assert str(s0 + 1) == "s0 + 1"
    assert str(1 + s0) == "s0 + 1"
    assert str(3 - s0) == "-s0 + 3"
    assert str(s0 - 3) == "s0 - 3"
    assert str(-s0) == "-s0"
    assert str(s0 * s1 + 2 * s0 - 3) == "s0*s1 + 2*s0 - 3"
    assert str(s0 * s0) == "s0*s0"
    assert (s0 * s1 + 2 * s0 - 3).hint == 4 * 6 + 2 * 4 - 3
    assert env.guards == []  # arithmetic alone assumes nothing


def test_terms_that_cancel_give_plain_ints(env):
    s0, s1 = env.create_symbol(4), env.create_symbol(6)
    difference = s0 - s0
    assert type(difference) is int and difference == 0
    assert (s0 + 5 - s0) == 5 and type(s0 + 5 - s0) is int
    assert type(s0 * s1 - s1 * s0) is int
    assert env.guards == []


def test_exact_division_by_a_constant_needs_no_guard(env):
    s0 = env.create_symbol(4)
    assert str((6 * s0) // 3) == "2*s0"
    assert env.guards == []


def test_division_exact_only_for_the_example_records_a_divisibility_guard(env):
    s0 = env.create_symbol(4)
    half = (3 * s0) // 2
    assert str(half) == "3/2*s0"
    assert half.hint == 6
    assert env.guard_texts() == ["(3*s0) % 2 == 0"]
    (guard,) = env.guards
    assert guard.holds({"s0": 8})
    assert not guard.holds({"s0": 5})


def test_division_not_exact_for_the_example_raises(env):
    s0 = env.create_symbol(4)
    with pytest.raises(ValueError, match="not divisible by 3"):
        s0 // 3
    with pytest.raises(ZeroDivisionError):
        s0 // 0


def test_division_by_a_symbolic_factor_every_term_contains(env):
    s0, s1 = env.create_symbol(4), env.create_symbol(6)
    assert str((2 * s0 * s1 + s0) // s0) == "2*s1 + 1"
    assert str((s0 * s1) // s1) == "s0"
    assert env.guards == []


def test_division_by_a_symbol_not_in_every_term_specialises_with_guards(env):
    s0 = env.create_symbol(4)
    assert (s0 + 4) // s0 == 2
    assert set(env.guard_texts()) >= {"s0 + 4 == 8", "s0 == 4"}
    assert 12 // s0 == 3


def test_remainder_is_zero_for_multiples_and_guarded_otherwise(env):
    s0 = env.create_symbol(5)
    assert (4 * s0) % 2 == 0
    assert env.guards == []
    assert s0 % 2 == 1
    assert env.guard_texts() == ["(s0) % 2 == 1"]
    assert env.guards[0].holds({"s0": 7}) and not env.guards[0].holds({"s0": 6})


@pytest.mark.parametrize("relation, outcome, guard", [
    ("<", True, "s0 < s1"), (">", False, "s0 <= s1"), ("<=", True, "s0 <= s1"),
    (">=", False, "s0 < s1"), ("!=", True, "s0 != s1"), ("==", False, "s0 != s1"),
])
def test_comparisons_decide_on_hints_and_record_what_held(env, relation, outcome, guard):
    s0, s1 = env.create_symbol(3), env.create_symbol(5)
    compare = {"<": SymInt.__lt__, ">": SymInt.__gt__, "<=": SymInt.__le__, ">=": SymInt.__ge__,
               "!=": SymInt.__ne__, "==": SymInt.__eq__}[relation]
    assert compare(s0, s1) is outcome
    assert env.guard_texts() == [guard]


def test_comparison_with_a_constant_records_a_guard(env):
    s0 = env.create_symbol(3)
    assert s0 > 2
    assert not (s0 + 1 < 4)
    assert env.guard_texts() == ["s0 > 2", "s0 + 1 >= 4"]


def test_the_same_guard_is_recorded_once(env):
    s0 = env.create_symbol(3)
    assert s0 < 10 and s0 < 10
    assert env.guard_texts() == ["s0 < 10"]


def test_comparisons_decided_without_symbols_record_nothing(env):
    s0 = env.create_symbol(3)
    assert s0 + 1 > s0
    assert s0 == s0
    assert env.guards == []


def test_equality_between_symbols_replaces_the_newer_by_the_older(env):
    s0, s1 = env.create_symbol(3), env.create_symbol(3)
    assert s1 == s0
    assert env.guard_texts() == ["s1 == s0"]
    assert str(s1 + 1) == "s0 + 1"
    assert str(s0 * s1) == "s0*s0"
    assert s1 - s0 == 0 and type(s1 - s0) is int
    assert env.guard_texts() == ["s1 == s0"]  # later comparisons are decided without guards


def test_equalities_learnt_through_old_expressions_keep_every_symbol_linked(env):
    s0, s1, s2, s3 = (env.create_symbol(3) for _ in range(4))
    assert s3 == s0
    assert s3 == s1  # s3 was made before it came to stand for s0
    assert s0 + s1 + s3 == 3 * s0 and type(s0 - s1) is int
    assert str(s2 + s3) == "s0 + s2"


def test_inequality_that_fails_also_teaches_the_equality(env):
    s0, s1 = env.create_symbol(3), env.create_symbol(3)
    assert not (s0 != s1)
    assert env.guard_texts() == ["s0 == s1"]
    assert str(2 * s1) == "2*s0"


def test_equality_with_a_constant_replaces_the_symbol(env):
    s0, s1 = env.create_symbol(3), env.create_symbol(4)
    assert s0 == 3
    assert s0 + s1 + 1 == s1 + 4
    assert str(s0 + s1) == "s1 + 3"


def test_int_specialises_with_a_guard(env):
    s0 = env.create_symbol(7)
    assert int(s0 * 2) == 14
    assert env.guard_texts() == ["2*s0 == 14"]
    assert [None] * 2 * s0 == [None] * 14  # __index__ specialises as int() does


def test_bool_is_a_comparison_with_zero(env):
    s0 = env.create_symbol(7)
    assert bool(s0 - 7) is False
    assert env.guard_texts() == ["s0 - 7 == 0"]


def test_str_and_python_forms(env):
    s0, s1 = env.create_symbol(4), env.create_symbol(6)
    assert (str(s0), s0.python()) == ("s0", "s0")
    assert ((2 * s0).python()) == "2*s0"
    assert (s0 * s1 + s0 - 1).python() == "(s0*s1 + s0 - 1)"
    three_halves = (3 * s0) // 2
    assert str(three_halves + 1) == "3/2*s0 + 1"
    assert (three_halves + 1).python() == "(3*s0 + 2) // 2"
    assert repr(s0 + 1) == "s0 + 1"


@pytest.mark.parametrize("hints", [{"s0": 2, "s1": 2}, {"s0": 5, "s1": 3}, {"s0": 10, "s1": 7}])
def test_python_form_computes_the_value(env, hints):
    s0, s1 = env.create_symbol(4), env.create_symbol(6)
    expression = (3 * s0 * s1) // 2 + s1 - 2
    assert eval(expression.python(), {}, dict(hints)) == expression.evaluate(hints)
    assert env.evaluate(expression, hints) == expression.evaluate(hints)
    assert env.evaluate(5) == 5


def test_shape_guard_holds_for_other_hint_values(env):
    s0, s1 = env.create_symbol(3), env.create_symbol(5)
    assert s0 * 2 > s1
    (guard,) = env.guards
    assert isinstance(guard, ShapeGuard)
    assert str(guard) == "2*s0 > s1"
    assert guard.holds({"s0": 3, "s1": 5})
    assert guard.holds({"s0": 10, "s1": 19})
    assert not guard.holds({"s0": 10, "s1": 20})


@pytest.mark.parametrize("build, could", [
    (lambda s0, s1: s0, False),
    (lambda s0, s1: s0 * s1, False),
    (lambda s0, s1: s0 + s1 - 2, False),
    (lambda s0, s1: s0 - 1, True),
    (lambda s0, s1: s0 - s1, True),
    (lambda s0, s1: (s0 * 2) // 4, True),
    (lambda s0, s1: (s0 * 3) // 2, False),
])
def test_could_be_one(env, build, could):
    size = build(env.create_symbol(4), env.create_symbol(6))
    taken = list(env.guards)
    assert size.could_be_one() is could
    assert env.guards == taken  # answered without a guard


def test_sizes_must_be_ints(env):
    s0 = env.create_symbol(4)
    with pytest.raises(TypeError):
        s0 + 1.5
    with pytest.raises(TypeError):
        s0 < 2.5
    with pytest.raises(TypeError):
        s0 % 2.0


def test_an_index_symbol_takes_any_value_and_its_decisions_are_guards():
    env = ShapeEnv()
    index = env.create_index(0, "a loop index")
    assert env.hints[str(index)] == 0 and env.sources[str(index)] == "a loop index"
    assert (index + 1 > 0) is True
    assert [str(guard) for guard in env.guards] == [f"{index} + 1 > 0"]
    with pytest.raises(ValueError):
        env.create_symbol(0)  # a size symbol stays 2 or more


def test_substitute_replaces_one_symbol_and_records_no_guard(env):
    s0, s1 = env.create_symbol(5), env.create_symbol(7)
    expression = 3 * s0 * s1 - s0 + 2
    assert str(expression.substitute("s1", s0 - 1)) == str(3 * s0 * s0 - 4 * s0 + 2)
    assert expression.substitute("s0", 0) == 2
    assert expression.substitute("s1", 2).evaluate({"s0": 4}) == 3 * 4 * 2 - 4 + 2
    assert env.guards == []
