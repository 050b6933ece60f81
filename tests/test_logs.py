"""pyjit/logs.py: the named logs, PYJIT_LOGS and set_logs (NOTE(logs))."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pyjit
from pyjit import logs

SPEC_NAMES = ["graph_code", "graph_breaks", "guards", "recompiles", "recompiles_verbose", "bytecode", "output_code",
              "aot_graphs", "compiled_autograd", "compiled_autograd_verbose", "dynamic"]


@pytest.fixture(autouse=True)
def logs_off():
    logs.set_logs()
    yield
    logs.set_logs()


def test_the_logs_are_the_ones_the_spec_names():
    assert sorted(logs.LOG_NAMES) == sorted(SPEC_NAMES)
    assert pyjit.set_logs is logs.set_logs


def test_logs_are_off_until_set(capsys):
    logs.get_logger("guards").debug("hidden")
    assert capsys.readouterr().err == ""
    assert not logs.enabled("guards")


def test_set_logs_turns_on_the_names_given_and_off_all_others(capsys):
    logs.set_logs(guards=True, dynamic=True)
    assert logs.enabled("guards") and logs.enabled("dynamic") and not logs.enabled("output_code")
    logs.get_logger("guards").debug("guard %s", "x.shape[0] == 3")
    logs.get_logger("output_code").info("hidden")
    assert capsys.readouterr().err == "[pyjit.guards] guard x.shape[0] == 3\n"
    logs.set_logs(output_code=True)
    assert not logs.enabled("guards") and logs.enabled("output_code")
    logs.set_logs()
    assert not any(logs.enabled(name) for name in logs.LOG_NAMES)


def test_unknown_names_are_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match="unknown log name.*'graph'.*the logs are graph_code, graph_breaks"):
        logs.set_logs(graph=True)
    with pytest.raises(ValueError, match="'nope'"):
        logs.get_logger("nope")


def test_records_do_not_reach_the_root_logger():
    seen = []

    class Recorder(logging.Handler):
        def emit(self, record):
            seen.append(record)

    root = logging.getLogger()
    recorder = Recorder(logging.DEBUG)
    root.addHandler(recorder)
    try:
        logs.set_logs(bytecode=True)
        logs.get_logger("bytecode").debug("only on pyjit's handler")
    finally:
        root.removeHandler(recorder)
    assert seen == []  # an application's root handler would otherwise print it twice


def run_with_environment(value: str) -> subprocess.CompletedProcess:
    code = ("import pyjit\nfrom pyjit import logs\n"
            "print(sorted(name for name in logs.LOG_NAMES if logs.enabled(name)))\n"
            "logs.get_logger('graph_breaks').debug('a break')\n")
    # The child imports the pyjit this test imported: installed, or the source tree.
    environment = dict(os.environ, PYJIT_LOGS=value, PYTHONPATH=str(Path(pyjit.__file__).parents[1]))
    return subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, env=environment, check=True)


def test_pyjit_logs_in_the_environment_turns_logs_on_at_import():
    result = run_with_environment(" graph_breaks, output_code ,")
    assert result.stdout.strip() == "['graph_breaks', 'output_code']"
    assert result.stderr == "[pyjit.graph_breaks] a break\n"


def test_an_unknown_name_in_the_environment_warns_and_keeps_the_others():
    result = run_with_environment("graph_breaks,typo")
    assert result.stdout.strip() == "['graph_breaks']"
    assert "UserWarning: PYJIT_LOGS: unknown log name(s) 'typo'" in result.stderr
