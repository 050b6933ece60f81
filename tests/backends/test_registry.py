"""pyjit/backends/registry.py: naming, registering, listing and finding backends."""

import importlib
import sys
import textwrap

import pytest

import pyjit
from pyjit.backends import registry
from pyjit.backends.registry import ENTRY_POINT_GROUP, list_backends, lookup_backend, register_backend
from pyjit.exc import InvalidBackend, PyjitError

PLUGIN_MODULE = "pyjit_test_backend_plugin"


@pytest.fixture(autouse=True)
def private_registry(monkeypatch):
    """Registrations made by a test vanish with it."""
    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    monkeypatch.setattr(registry, "_TAGS", dict(registry._TAGS))


def compiler(graph_module, example_inputs):
    return graph_module


def test_eager_is_registered_as_a_debugging_backend():
    # As torch._dynamo.list_backends: debugging backends are listed only when asked for.
    assert "eager" not in list_backends() and "inductor" in list_backends()
    assert "eager" in list_backends(exclude_tags=None) and "eager" in list_backends(exclude_tags=())
    assert list_backends(None) == sorted(list_backends(None))
    assert set(list_backends()) < set(list_backends(None))


def test_tags_choose_what_is_listed():
    register_backend("half-done", compiler, tags=("experimental",))
    register_backend("tagged", compiler, tags=("mine",))
    assert "half-done" not in list_backends() and "half-done" in list_backends(None)
    assert "tagged" in list_backends() and "tagged" not in list_backends(exclude_tags=("mine",))
    assert lookup_backend("half-done") is compiler  # a tag never hides a backend from lookup
    with pytest.raises(TypeError, match="tuple of strings"):
        register_backend("bad-tags", compiler, tags="debug")


def test_top_level_names():
    assert pyjit.list_backends is list_backends
    assert pyjit.register_backend is register_backend
    assert "eager" in pyjit.list_backends(exclude_tags=None)


def test_register_as_a_bare_decorator_names_the_backend_after_the_function():
    @register_backend
    def my_bare_backend(graph_module, example_inputs):
        return graph_module

    assert my_bare_backend.__name__ == "my_bare_backend"  # the decorator returns the function
    assert "my_bare_backend" in list_backends()
    assert lookup_backend("my_bare_backend") is my_bare_backend


def test_register_with_a_name():
    @register_backend("chosen-name")
    def whatever(graph_module, example_inputs):
        return graph_module

    assert callable(whatever)
    assert lookup_backend("chosen-name") is whatever
    assert "whatever" not in list_backends()


def test_register_directly_with_name_and_function():
    assert register_backend("direct", compiler) is compiler
    assert lookup_backend("direct") is compiler


def test_register_with_keyword_name_or_no_name():
    register_backend(name="by-keyword")(compiler)
    assert lookup_backend("by-keyword") is compiler

    @register_backend()
    def unnamed_call(graph_module, example_inputs):
        return graph_module

    assert lookup_backend("unnamed_call") is unnamed_call


@pytest.mark.parametrize("name", ["eager", "twice"])
def test_a_name_is_registered_once(name):
    if name == "twice":
        register_backend("twice", compiler)
    before = lookup_backend(name)
    with pytest.raises(ValueError, match=f"a backend named '{name}' is already registered"):
        register_backend(name, lambda graph_module, example_inputs: None)
    with pytest.raises(ValueError):
        register_backend(name)(compiler)
    assert lookup_backend(name) is before


@pytest.mark.parametrize("name", ["", 3])
def test_names_must_be_non_empty_strings(name):
    with pytest.raises(TypeError, match="non-empty string"):
        register_backend(name, compiler)


def test_unknown_backend_raises_invalid_backend_listing_the_available_ones():
    register_backend("listed", compiler)
    with pytest.raises(InvalidBackend) as caught:
        lookup_backend("no-such-backend")
    message = str(caught.value)
    assert "'no-such-backend'" in message
    assert "available: " in message and "eager" in message and "listed" in message
    assert isinstance(caught.value, PyjitError)


def test_a_callable_is_its_own_backend():
    assert lookup_backend(compiler) is compiler


def test_registrations_do_not_leak_between_tests():
    assert not {"direct", "listed", "twice", "chosen-name", "my_bare_backend"} & set(list_backends())


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """A distribution on sys.path whose entry point names a backend in a module of its own."""
    (tmp_path / f"{PLUGIN_MODULE}.py").write_text(textwrap.dedent("""
        loads = []
        loads.append(1)

        def compile_it(graph_module, example_inputs):
            return graph_module
    """))
    dist_info = tmp_path / "pyjit_test_plugin-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: pyjit-test-plugin\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nplugged = {PLUGIN_MODULE}:compile_it\n\n[other_group]\nelsewhere = {PLUGIN_MODULE}:compile_it\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield
    sys.modules.pop(PLUGIN_MODULE, None)
    importlib.invalidate_caches()


def test_entry_point_backends_are_listed_without_being_imported(installed_plugin):
    assert ENTRY_POINT_GROUP == "pyjit_backends"
    names = list_backends()
    assert "plugged" in names and "inductor" in names
    assert "elsewhere" not in names
    assert PLUGIN_MODULE not in sys.modules


def test_entry_point_backends_are_loaded_on_lookup(installed_plugin):
    backend = lookup_backend("plugged")
    plugin = sys.modules[PLUGIN_MODULE]
    assert backend is plugin.compile_it
    assert lookup_backend("plugged") is backend
    assert plugin.loads == [1]  # loaded once, then registered
    with pytest.raises(ValueError, match="already registered"):
        register_backend("plugged", compiler)


def test_a_name_from_another_group_is_not_a_backend(installed_plugin):
    with pytest.raises(InvalidBackend, match="plugged"):
        lookup_backend("elsewhere")
