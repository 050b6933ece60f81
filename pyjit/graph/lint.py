"""`lint()`: the invariants every pass must keep, each with a message that says how to fix it."""

from __future__ import annotations

import keyword

from ..exc import LintError
from .node import KINDS
from .printer import is_reserved


def lint(graph) -> None:
    """Raise LintError for the first broken invariant of `graph`; the message names the
    node, says what is wrong and how to fix it, and prints the graph."""
    problem = _first_problem(graph)
    if problem is not None:
        what, fix = problem
        raise LintError(f"{what}\n  fix: {fix}\n\n{graph}")


def _first_problem(graph) -> tuple[str, str] | None:
    defined: set = set()
    names: set[str] = set()
    members = set(graph.nodes)  # a set: membership is asked for every user of every node
    seen_call = False
    if not _is_free_name(graph.name):
        return (f"graph name {graph.name!r} is not a legal, free Python name",
                "name the graph with an identifier: it is the name of the printed function")
    outputs = [node for node in graph.nodes if node.kind == "output"]
    if len(outputs) != 1:
        return (f"graph {graph.name} has {len(outputs)} output nodes", "give it exactly one, with graph.output(value)")
    if graph.nodes[-1] is not outputs[0]:
        return (f"node {graph.nodes[-1].name} comes after the output node", "the output node must be the last node")
    for node in graph.nodes:
        found = _node_problem(graph, node, defined, names, seen_call, members)
        if found is not None:
            return found
        seen_call = seen_call or node.kind in ("call", "constant")
        defined.add(node)
        names.add(node.name)
    return None


def _node_problem(graph, node, defined, names, seen_call, members) -> tuple[str, str] | None:
    if node.graph is not graph:
        return (f"node {node.name} belongs to another graph", "create nodes through this graph's builder methods")
    if node.kind not in KINDS:
        return (f"node {node.name} has kind {node.kind!r}", f"use one of {', '.join(KINDS)}")
    if not _is_free_name(node.name):
        return (f"node name {node.name!r} is not a legal, free Python name", "let the graph's namer choose names")
    if node.name in names:
        return (f"two nodes are named {node.name}", "let the graph's namer choose names")
    if node.kind == "placeholder" and seen_call:
        return (f"placeholder {node.name} comes after a call or constant", "create every placeholder first")
    if node.kind == "call" and not callable(node.target):
        return (f"call node {node.name} has a target that cannot be called: {node.target!r}", "call a registry op or a function")
    for used in node.inputs():
        if used.graph is not graph:
            return (f"node {node.name} uses {used.name}, which belongs to another graph", "copy values between graphs through placeholders")
        # Before the order check: the output comes last, so a use of it is always early.
        if used.kind == "output":
            return (f"node {node.name} uses the output node", "use the value the output returns instead")
        if used not in defined:
            return (f"node {node.name} uses {used.name} before it is defined", "create nodes in the order they run")
        if node not in used.users:
            return (f"node {node.name} uses {used.name} but is missing from its users", "edit arguments with node.replace_input")
    for user in node.users:
        if user.graph is not graph or user not in members:
            return (f"{node.name} lists user {user.name}, which is not in the graph", "erase nodes with graph.erase")
        if node not in user.inputs():
            return (f"{node.name} lists user {user.name}, which does not use it", "edit arguments with node.replace_input")
    return None


def _is_free_name(name) -> bool:
    """An ASCII identifier (NOTE(printed-code)) that no printed code reserves."""
    return isinstance(name, str) and name.isascii() and name.isidentifier() and not keyword.iskeyword(name) \
        and not is_reserved(name)
