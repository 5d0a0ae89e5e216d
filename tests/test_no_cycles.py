"""No import cycle between our modules, counting `if TYPE_CHECKING:` and in-function imports (grimp's graph).

import-linter's contracts check packages against each other; this checks every module against every other, so a
ring that runs through three packages and back (agent -> services -> scheduler -> agent) fails here by name.
Run it as a script to print the rings: `python -m tests.test_no_cycles`.
"""

from __future__ import annotations

import grimp

PACKAGES = ("bot", "handlers", "tools", "workspace")


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of ours it imports (any import statement: TYPE_CHECKING and in-function too)."""
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_cycles_finds_a_ring_and_ignores_a_chain() -> None:
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(ring) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_module_imports_itself_back() -> None:
    rings = cycles(import_graph())
    assert rings == [], "import cycles (break each: a parameter, a Protocol below, or a hook):\n" + "\n".join(
        " <-> ".join(ring) for ring in rings)


if __name__ == "__main__":
    for ring in cycles(import_graph()):
        print(f"{len(ring)} modules: {' '.join(ring)}")
