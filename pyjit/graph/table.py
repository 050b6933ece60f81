"""The readable form of a graph: one row per node."""

from .node import Node


def argument_text(value) -> str:
    """Arguments as the table shows them: nodes as %name, everything else as repr."""
    if isinstance(value, Node):
        return f"%{value.name}"
    if type(value) is tuple:
        inner = ", ".join(argument_text(item) for item in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if type(value) is list:
        return "[" + ", ".join(argument_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {argument_text(item)}" for key, item in value.items()) + "}"
    if isinstance(value, slice):
        parts = [argument_text(part) if part is not None else "" for part in (value.start, value.stop, value.step)]
        return ":".join(parts[:2] if value.step is None else parts)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"<array {value.dtype}{list(value.shape)}>"
    return repr(value)


def meta_text(meta) -> str:
    if meta is None:
        return ""
    if isinstance(meta, type):
        return meta.__name__
    if type(meta) in (tuple, list):
        return "(" + ", ".join(meta_text(item) for item in meta) + ")"
    return str(meta)


def graph_table(graph) -> str:
    rows = [("name", "kind", "target", "args", "meta", "source")]
    for node in graph.nodes:
        if node.kind == "call":
            target = getattr(node.target, "name", None) or getattr(node.target, "__qualname__", repr(node.target))
        elif node.kind == "constant":
            target = argument_text(node.target)
        else:
            target = ""
        pieces = [argument_text(arg) for arg in node.args]
        pieces += [f"{key}={argument_text(value)}" for key, value in node.kwargs.items()]
        rows.append((node.name, node.kind, target, ", ".join(pieces), meta_text(node.meta), str(node.loc or "")))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    guards = graph.shape_env.guard_texts()
    header = f"graph {graph.name}:"
    footer = [f"size guards: {', '.join(guards)}"] if guards else []
    return "\n".join([header] + ["  " + line for line in lines] + footer)
