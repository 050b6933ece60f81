"""pyjit.config: the settings of SPEC section 2 and `patch`."""

import importlib
import os
import threading

import pytest

import pyjit
from pyjit import config

DEFAULTS = {
    "recompile_limit": 8,
    "verbose": False,
    "verify_correctness": False,
    "assume_static_by_default": True,
    "automatic_dynamic_shapes": True,
    "replay_side_effects": True,
    "compiled_autograd": False,
}


def test_defaults():
    assert pyjit.config is config
    for name, value in DEFAULTS.items():
        assert getattr(config, name) == value, name
    assert isinstance(config.cache_dir, str) and os.path.isabs(config.cache_dir)


@pytest.mark.parametrize(("environment", "expected"), [
    ({"PYJIT_CACHE_DIR": "/somewhere/pyjit-cache", "XDG_CACHE_HOME": "/xdg"}, "/somewhere/pyjit-cache"),
    ({"XDG_CACHE_HOME": "/xdg"}, "/xdg/pyjit"),
    ({"XDG_CACHE_HOME": "relative/is/ignored", "HOME": "/home/someone"}, "/home/someone/.cache/pyjit"),
    ({"HOME": "/home/someone"}, "/home/someone/.cache/pyjit"),
])
def test_cache_dir_default_comes_from_the_environment_at_import(monkeypatch, environment, expected):
    for name in ("PYJIT_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    fresh = importlib.util.module_from_spec(importlib.util.find_spec("pyjit.config"))
    fresh.__spec__.loader.exec_module(fresh)
    assert fresh.cache_dir == expected


@pytest.mark.parametrize(("variable", "setting"), [("PYJIT_TRACE_DIR", "trace_dir"),
                                                   ("PYJIT_REMOTE_CACHE", "remote_cache")])
def test_trace_dir_and_remote_cache_come_from_the_environment_at_import(monkeypatch, variable, setting):
    monkeypatch.delenv(variable, raising=False)
    fresh = importlib.util.module_from_spec(importlib.util.find_spec("pyjit.config"))
    fresh.__spec__.loader.exec_module(fresh)
    assert getattr(fresh, setting) is None  # off unless asked for
    monkeypatch.setenv(variable, "redis://example:6379/2")
    fresh.__spec__.loader.exec_module(fresh)
    assert getattr(fresh, setting) == "redis://example:6379/2"


def test_patch_as_a_context_manager_restores_values():
    with config.patch(recompile_limit=2, verbose=True):
        assert (config.recompile_limit, config.verbose) == (2, True)
    assert (config.recompile_limit, config.verbose) == (8, False)


def test_patch_restores_values_when_the_block_raises():
    with pytest.raises(KeyError), config.patch(compiled_autograd=True):
        assert config.compiled_autograd is True
        raise KeyError("inside")
    assert config.compiled_autograd is False


def test_patch_restores_a_value_set_inside_the_block():
    with config.patch(recompile_limit=3):
        config.recompile_limit = 5
    assert config.recompile_limit == 8


def test_patches_nest():
    with config.patch(recompile_limit=3):
        with config.patch(recompile_limit=4, verbose=True):
            assert (config.recompile_limit, config.verbose) == (4, True)
        assert (config.recompile_limit, config.verbose) == (3, False)
    assert config.recompile_limit == 8


def test_patch_as_a_decorator_applies_per_call():
    seen = []

    @config.patch(automatic_dynamic_shapes=False)
    def read(depth):
        seen.append(config.automatic_dynamic_shapes)
        if depth:
            read(depth - 1)
        seen.append(config.automatic_dynamic_shapes)

    assert config.automatic_dynamic_shapes is True
    read(2)  # recursion: each call saves and restores on its own
    assert seen == [False] * 6
    read(0)
    assert config.automatic_dynamic_shapes is True


def test_patch_decorator_restores_when_the_function_raises():
    @config.patch(verify_correctness=True)
    def fail():
        raise ValueError(config.verify_correctness)

    with pytest.raises(ValueError, match="True"):
        fail()
    assert config.verify_correctness is False


def test_patch_takes_a_dict_too():
    with config.patch({"replay_side_effects": False}, recompile_limit=1):
        assert (config.replay_side_effects, config.recompile_limit) == (False, 1)
    assert (config.replay_side_effects, config.recompile_limit) == (True, 8)


def test_patch_of_an_unknown_name_raises_at_once_naming_the_settings():
    with pytest.raises(AttributeError, match="recompile_limt") as info:
        config.patch(recompile_limt=1, verbose=True)
    for name in DEFAULTS:
        assert name in str(info.value)
    assert "cache_dir" in str(info.value)
    assert "patch" not in str(info.value).split("settings are")[1]
    assert config.verbose is False


def test_patch_is_process_wide():
    seen = []
    with config.patch(recompile_limit=1):
        thread = threading.Thread(target=lambda: seen.append(config.recompile_limit))
        thread.start()
        thread.join()
    assert seen == [1]


@pytest.mark.parametrize(("name", "value", "message"), [
    ("remote_cache", 6379, "remote_cache must be a string or None, not int"),
    ("remote_cache", b"redis://h:1/0", "remote_cache must be a string or None, not bytes"),
    ("recompile_limit", "8", "recompile_limit must be an int, not str"),
    ("recompile_limit", True, "recompile_limit must be an int, not bool"),
    ("verbose", 1, "verbose must be True or False, not int"),
    ("aot_memory_budget", "0.5", "aot_memory_budget must be a number, not str"),
    ("cache_dir", None, "cache_dir must be a path"),
    ("trace_dir", 3, "trace_dir must be a path .* or None"),
])
def test_a_value_of_the_wrong_type_is_refused_when_set_naming_the_setting(name, value, message):
    before = getattr(config, name)
    with pytest.raises(TypeError, match=f"pyjit.config.{message}"):
        setattr(config, name, value)
    with pytest.raises(TypeError, match=f"pyjit.config.{message}"):
        config.patch({name: value})
    assert getattr(config, name) is before


def test_values_of_the_right_type_are_taken(tmp_path):
    with config.patch(cache_dir=tmp_path, aot_memory_budget=1, remote_cache="redis://localhost/2", trace_dir=None):
        assert (config.cache_dir, config.aot_memory_budget, config.remote_cache) == (tmp_path, 1,
                                                                                     "redis://localhost/2")


def test_a_bad_remote_cache_in_the_environment_warns_and_is_not_used(monkeypatch):
    monkeypatch.setenv("PYJIT_REMOTE_CACHE", "redis://127.0.0.1:0/0")
    fresh = importlib.util.module_from_spec(importlib.util.find_spec("pyjit.config"))
    with pytest.warns(UserWarning, match=r"PYJIT_REMOTE_CACHE\) 'redis://127.0.0.1:0/0': port 0 .* cache is off"):
        fresh.__spec__.loader.exec_module(fresh)
    assert fresh.remote_cache is None
