"""A minimum s-t cut by max-flow (Edmonds-Karp): what the min-cut partitioner solves."""

from __future__ import annotations

from collections import deque


def min_cut(capacity: dict[tuple, int], source, sink) -> set:
    """The vertices on the source's side of a minimum cut of the network whose edges
    are `capacity` ((u, v) -> capacity): those still reachable from `source` once a
    maximum flow saturates every path to `sink`. The graphs are a joint graph's
    forward side (hundreds of vertices), so shortest augmenting paths are fast enough."""
    residual: dict = {}
    for (u, v), amount in capacity.items():
        residual.setdefault(u, {})[v] = residual.get(u, {}).get(v, 0) + amount
        residual.setdefault(v, {}).setdefault(u, 0)
    while True:
        parents = _reachable(residual, source)
        if sink not in parents:
            return set(parents)
        path, vertex = [], sink
        while vertex != source:
            path.append((parents[vertex], vertex))
            vertex = parents[vertex]
        pushed = min(residual[u][v] for u, v in path)
        for u, v in path:
            residual[u][v] -= pushed
            residual[v][u] += pushed


def _reachable(residual: dict, source) -> dict:
    """Breadth-first over edges with capacity left: vertex -> the vertex it was reached from."""
    parents = {source: None}
    queue = deque([source])
    while queue:
        vertex = queue.popleft()
        for neighbour, left in residual.get(vertex, {}).items():
            if left > 0 and neighbour not in parents:
                parents[neighbour] = vertex
                queue.append(neighbour)
    return parents
