# SPDX-License-Identifier: BSD-2-Clause
"""The rooms of pcispy's import graph, bottom to top, and the reader that holds the code to
them.

A *room* is a set of modules (dotted names, ``*`` standing for one name) and the rooms it
stands on. A module may import its own room and every room its room stands on, directly or
through others; nothing else. :data:`ROOMS` lists them from the bottom up, so a room stands
only on rooms listed before it. A module belongs to the room whose pattern names it most
closely, compared from the last name back (a name beats ``*_feature``, which beats ``*``):
``pcispy.dma.registers`` is in ``data`` (``pcispy.*.registers``), not in ``dma``
(``pcispy.dma.*``).

:func:`read` reads every import of every module of the package with :mod:`ast`, without
importing anything: at module level, inside functions, and a module named by a string
(``"module:attribute"``, or the first argument of one of the :data:`RUNNERS`, as
``importlib`` and the simulator's runner take it). :func:`problems` lists what breaks the
rules:

- an import against the rooms (a room importing one it does not stand on);
- a cycle of modules (tests left out);
- production code importing a test module (the wheel leaves ``tests/`` out);
- an import inside a function without a comment saying why it waits (only an optional or
  heavy dependency should: cocotb inside the simulator, matplotlib for a plot);
- a production module over :data:`MAX_LINES` lines; two public classes of one name.

``python -m pcispy.rooms`` prints the problems and the figures: cycles, imports inside
functions, imports of tests, the largest modules. pcispy/tests/test_rooms.py holds the
package to the rules (``make lint`` and ``make test`` run it).
"""

import ast
import fnmatch
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

__all__ = ["Room", "ROOMS", "SLICES", "RUNNERS", "MAX_LINES", "LONG_MODULES", "Import", "Graph", "read",
           "room_of", "problems", "import_problems", "size_problems", "name_problems",
           "figures", "is_test"]


class Room(NamedTuple):
    """One room: its ``name``, the ``modules`` it holds (patterns of dotted names), the
    rooms it stands ``on`` and what it is (``doc``)."""
    name: str
    modules: tuple
    on: tuple
    doc: str


#: The capability slices: gateware, tests and (in ``data`` and ``features``) their registers
#: and host side. No slice imports another slice's gateware.
SLICES = ("exerciser", "dma", "spy", "check", "irq", "sidechannel")

#: Bottom to top.
ROOMS = (
    Room("package", ("pcispy", "pcispy.rooms"), (),
         "the package and this declaration"),
    Room("pci", ("pcispy.pci", "pcispy.pci.*"), ("package",),
         "the PCI vocabulary: bus signature, commands, terminations, rules, the LFSR"),
    Room("csr", ("pcispy.csr", "pcispy.csr.*"), ("pci",),
         "the register idiom and the register bank"),
    Room("data", ("pcispy.*.registers", "pcispy.sidechannel.protocol"), ("csr",),
         "what gateware and host share, as data (no gateware): the register blocks and the "
         "side channel's frames"),
    Room("core", ("pcispy.core", "pcispy.core.*"), ("data",),
         "pads, configuration space, target, initiator"),
    *(Room(name, (f"pcispy.{name}", f"pcispy.{name}.*"), ("core",),
           f"the {name} slice's gateware") for name in SLICES),
    Room("board", ("pcispy.board", "pcispy.board.*"), SLICES,
         "the board top: every slice wired"),
    Room("platform", ("pcispy.platform", "pcispy.platform.*"), ("board",),
         "vendor cells, boards, the bitstream build"),
    Room("host", ("pcispy.host", "pcispy.host.*"), ("data",),
         "the board driver, transports, errors, the command framework"),
    Room("trace", ("pcispy.trace", "pcispy.trace.*"), ("host", "spy"),
         "trace files and their formats on the host"),
    Room("features", ("pcispy.*.*_feature",), ("trace", *SLICES),
         "the slices' host features and commands"),
    Room("sim", ("pcispy.sim", "pcispy.sim.*"), ("board", "features"),
         "the simulated PCI system"),
    Room("formal", ("pcispy.formal", "pcispy.formal.*"), ("board",),
         "the proofs"),
    Room("app", ("pcispy.app", "pcispy.app.*", "pcispy.app.*_feature"),
         ("platform", "sim", "formal"),
         "the CLI, the report, the demo, the benchmarks"),
)

#: Calls whose first argument, a string, names a module they import or run: an import by name.
RUNNERS = frozenset({"import_module", "find_spec", "run", "run_bench"})

#: The longest a production module may be, in lines.
MAX_LINES = 800

#: The production modules still over :data:`MAX_LINES`, each with its length today as a
#: ceiling: such a module may shrink but not grow, and its entry goes when it is split
#: (an entry for a module within :data:`MAX_LINES`, or gone, is itself a problem, so the
#: list only shrinks).
LONG_MODULES = {}


class Import(NamedTuple):
    """One import: ``module`` (dotted) imports ``target`` (a pcispy module, or another
    top-level package) at ``line``; ``local`` if inside a function, ``by_name`` if a string
    names it; ``comment`` whether a comment stands on the line, or just above it or above
    the run of import lines it belongs to."""
    module: str
    target: str
    line: int
    local: bool
    by_name: bool
    comment: bool


class Graph(NamedTuple):
    """What :func:`read` found: ``modules`` (dotted name -> path), ``imports`` (a list of
    :class:`Import`) and ``classes`` (dotted module -> names of its top-level classes)."""
    modules: dict
    imports: list
    classes: dict


def is_test(module):
    """Whether ``module`` is a test module (it lies in a ``tests`` folder)."""
    return "tests" in module.split(".")


def _module_name(root, path):
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read(root=Path(__file__).resolve().parent.parent, package="pcispy"):
    """Read every module of ``package`` in the folder ``root`` (the repository)."""
    modules = {_module_name(root, path): path
               for path in sorted((Path(root) / package).rglob("*.py"))}

    def resolve(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    imports, classes, seen = [], {}, set()
    for module, path in modules.items():
        source = path.read_text()
        lines = source.splitlines()
        tree = ast.parse(source, str(path))
        classes[module] = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
        is_package = path.name == "__init__.py"

        def commented(line):
            """A comment on the line, or above it or above the run of imports it ends."""
            if "#" in lines[line - 1]:
                return True
            above = line - 2
            while above >= 0 and lines[above].strip().startswith(("import ", "from ")):
                above -= 1
            return above >= 0 and lines[above].strip().startswith("#")

        def add(target, node, local, by_name=False):
            if target.startswith(package + ".") or target == package:
                target = resolve(target)
            else:
                target = target.partition(".")[0]
            found = Import(module, target, node.lineno, local, by_name, commented(node.lineno))
            if found not in seen:
                seen.add(found)
                imports.append(found)

        def visit(node, local):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Import):
                    for alias in child.names:
                        add(alias.name, child, local)
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        here = module.split(".")[:None if is_package else -1]
                        here = here[:len(here) - child.level + 1]
                        base = ".".join(here + ([base] if base else []))
                    for alias in child.names:
                        full = f"{base}.{alias.name}"
                        add(full if full in modules else base, child, local)
                elif isinstance(child, ast.Call):
                    callee = child.func.attr if isinstance(child.func, ast.Attribute) else \
                        getattr(child.func, "id", "")
                    named = child.args[:1] if callee in RUNNERS else []
                    for arg in named:
                        if isinstance(arg, ast.Constant) and arg.value in modules:
                            add(arg.value, child, local, by_name=True)
                elif isinstance(child, ast.Constant) and isinstance(child.value, str) and \
                        ":" in child.value and child.value.partition(":")[0] in modules:
                    add(child.value.partition(":")[0], child, local, by_name=True)
                visit(child, local or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        visit(tree, False)
    return Graph(modules, imports, classes)


def _closeness(pattern):
    """How closely ``pattern`` names a module, from its last name back: a name beats a name
    with a ``*`` in it, which beats ``*``."""
    return [2 if "*" not in name else 1 if name != "*" else 0
            for name in reversed(pattern.split("."))]


def room_of(module, rooms=ROOMS):
    """The room ``module`` belongs to: that of the pattern naming it most closely (None:
    no pattern matches)."""
    matches = sorted((_closeness(pattern), room.name) for room in rooms
                     for pattern in room.modules
                     if fnmatch.fnmatchcase(module, pattern.replace("*", "[!.]*")))
    by_name = {room.name: room for room in rooms}
    return by_name[matches[-1][1]] if matches else None


def _beneath(rooms):
    """Room name -> the names of every room it may import (itself included)."""
    below = {}
    for room in rooms:
        below[room.name] = {room.name}.union(*(below.get(name, ()) for name in room.on))
    return below


def _cycles(graph):
    """The strongly connected sets of production modules (more than one module each)."""
    edges = defaultdict(set)
    for imp in graph.imports:
        if not imp.by_name and imp.target in graph.modules and imp.target != imp.module \
                and not is_test(imp.module) and not is_test(imp.target):
            edges[imp.module].add(imp.target)
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(node):   # Tarjan's algorithm, with an explicit stack of iterators
        work = [(node, iter(sorted(edges[node])))]
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
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

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return sorted(found)


def import_problems(graph, rooms=ROOMS):
    """Every import against the rules in ``graph``, one line each (empty: none): against the
    rooms, production code importing tests, a deferred import without its reason, a cycle;
    and a room standing on one not beneath it, a module in no room."""
    found = []
    names = [room.name for room in rooms]
    for room in rooms:
        for name in room.on:
            if name not in names[:names.index(room.name)]:
                found.append(f"room {room.name} stands on {name}, which is not beneath it")
    below = _beneath(rooms)
    room = {module: room_of(module, rooms) for module in graph.modules}
    for module in graph.modules:
        if not is_test(module) and room[module] is None:
            found.append(f"{module}: in no room")
    for imp in graph.imports:
        where = f"{graph.modules[imp.module]}:{imp.line}"
        if imp.target not in graph.modules or is_test(imp.module):
            if imp.local and not imp.comment and not is_test(imp.module):
                found.append(f"{where}: {imp.module} imports {imp.target} inside a function "
                             "without a comment saying why it waits")
            continue
        if is_test(imp.target):
            found.append(f"{where}: production module {imp.module} imports the test "
                         f"module {imp.target}")
            continue
        source, target = room[imp.module], room[imp.target]
        if source and target and target.name not in below[source.name]:
            found.append(f"{where}: {imp.module} ({source.name}) imports {imp.target} "
                         f"({target.name}), which room {source.name} does not stand on")
        if imp.local and not imp.by_name and not imp.comment:
            found.append(f"{where}: {imp.module} imports {imp.target} inside a function "
                         "without a comment saying why it waits")
    for cycle in _cycles(graph):
        found.append("import cycle: " + " <-> ".join(cycle))
    return found


def size_problems(graph, max_lines=MAX_LINES, allowed=None):
    """Every production module over ``max_lines`` lines, one line each, with its length;
    ``allowed`` (``{module: ceiling}``, none by default) lets a module named there reach
    its ceiling, and an entry whose module is within ``max_lines`` (or gone) is a problem
    too."""
    allowed = allowed or {}
    found = []
    for module, path in graph.modules.items():
        if is_test(module):
            continue
        lines = len(path.read_text().splitlines())
        ceiling = allowed.get(module, max_lines)
        if lines > ceiling:
            found.append(f"{path}: {lines} lines, over {ceiling}")
        elif module in allowed and lines <= max_lines:
            found.append(f"{module}: {lines} lines, within {max_lines}: its allowance "
                         "goes")
    found += [f"{module}: allowed {ceiling} lines, but there is no such module"
              for module, ceiling in allowed.items() if module not in graph.modules]
    return found


def name_problems(graph):
    """Every public class name declared by more than one production module, one line each."""
    owners = defaultdict(list)
    for module, classes in graph.classes.items():
        for name in classes:
            if not is_test(module) and not name.startswith("_"):
                owners[name].append(module)
    return [f"class {name} is declared in {', '.join(modules)}"
            for name, modules in sorted(owners.items()) if len(modules) > 1]


def problems(graph, rooms=ROOMS, max_lines=MAX_LINES, allowed=None):
    """Every breach of the rules in ``graph``, one line each (empty: none); ``allowed``:
    the long modules' ceilings (:func:`size_problems`)."""
    return import_problems(graph, rooms) + size_problems(graph, max_lines, allowed) + \
        name_problems(graph)


def figures(graph):
    """The measures of the graph, production code only: module cycles, imports inside
    functions (statements), imports of tests, the largest modules."""
    production = [imp for imp in graph.imports if not is_test(imp.module)]
    local = {(imp.module, imp.line) for imp in production if imp.local and not imp.by_name}
    sizes = sorted(((len(path.read_text().splitlines()), module)
                    for module, path in graph.modules.items() if not is_test(module)),
                   reverse=True)
    return {
        "modules": sum(not is_test(module) for module in graph.modules),
        "cycles": len(_cycles(graph)),
        "local_imports": len(local),
        "local_imports_by_module": dict(Counter(module for module, _ in local).most_common()),
        "imports_of_tests": len({(imp.module, imp.target) for imp in production
                                 if is_test(imp.target)}),
        "largest": [f"{module} {lines}" for lines, module in sizes[:8]],
    }


def main():
    graph = read()
    found = problems(graph, allowed=LONG_MODULES)
    for line in found:
        print(line)
    for key, value in figures(graph).items():
        print(f"{key}: {value}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
