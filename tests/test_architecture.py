"""The house holds: no import cycle (between files, or between rag's packages), no import running against the layer
order or the evaluation rooms' order, and no module (of rag, bench or the app) reaching past the public face of
another stage or room.

The layer order (lower may not import higher; equal layers may import each other, cycles aside):

    base        rag.errors, rag.settings, rag.urls, rag.http, rag.words, rag.extras, rag.files, rag.providers: no
                stage of their own
    documents < chunking < embeddings < retrieval < store < rerank < generation
                (retrieval is below the store: Store mixes in its search and hands out its records)
    pipeline    rag.pipeline, rag.searching, rag.ingested, and `rag` itself (its names load lazily from the stages)
    evaluation < reports < runs
    top         rag.cli, rag.__main__, ui, app_pages, app.py, bench

The evaluation's rooms have an order of their own (ROOMS): querysets < metrics < funnel < sweeps < comparisons,
judges, synthetic. A stage or room is entered through its face (its package __init__): a module of another one
imports `from rag.store import Hit`, never `from rag.store.records import Hit`; inside a stage or room its modules
import each other freely.

Every `import` and `from ... import` counts, at module level or inside a function or `if TYPE_CHECKING:` (a type a
module names is a dependency of it). `from rag.store import edge` is an import of the module rag.store.edge.
The package `__init__` a submodule import runs on the way is not counted: it is the face, not a dependency.
Packages are compared twice: rag's stages (rag.store, rag.evaluation, ...) and every subpackage ("room", e.g.
rag.evaluation.sweeps against rag.evaluation.funnel), where a face importing its own rooms is no cycle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BASE = ("rag.errors", "rag.settings", "rag.urls", "rag.http", "rag.words", "rag.extras", "rag.files", "rag.providers")
LAYERS: tuple[tuple[str, ...], ...] = (
    BASE,
    ("rag.documents",),
    ("rag.chunking",),
    ("rag.embeddings",),
    ("rag.retrieval",),
    ("rag.store",),
    ("rag.rerank",),
    ("rag.generation",),
    ("rag.pipeline", "rag.searching", "rag.ingested", "rag"),
    ("rag.evaluation",),
    ("rag.reports",),
    ("rag.runs",),
    ("rag.cli", "rag.__main__", "ui", "app_pages", "app", "bench"),
)
ROOMS: tuple[tuple[str, ...], ...] = (  # the evaluation's rooms, lower first (a lower room may not import a higher)
    ("rag.evaluation.querysets",),
    ("rag.evaluation.metrics",),
    ("rag.evaluation.funnel",),
    ("rag.evaluation.sweeps",),
    ("rag.evaluation.comparisons", "rag.evaluation.judges", "rag.evaluation.synthetic"),
)
WHOLE = ("rag", "app")  # layer entries that name one file, not a package of them
# The stages and rooms whose modules are private behind their package __init__ (single-file stages are their own
# face): a module outside one imports only its face.
STAGES = ("rag.documents", "rag.chunking", "rag.embeddings", "rag.retrieval", "rag.store", "rag.rerank",
          "rag.generation", "rag.evaluation", "rag.reports", "rag.runs", *(room for rooms in ROOMS for room in rooms))


@dataclass
class Report:
    cycles: list[list[str]] = field(default_factory=list)  # files importing each other, round and round
    package_cycles: list[list[str]] = field(default_factory=list)  # the same between rag's packages
    back_imports: list[str] = field(default_factory=list)  # "a -> b (line n)" where b's layer (or room) is above a's
    private_imports: list[str] = field(default_factory=list)  # a module importing another stage's private module

    def lines(self) -> list[str]:
        """Return every violation as one line of text, grouped by kind."""
        return ([f"cycle: {' -> '.join(c)}" for c in self.cycles]
                + [f"package cycle: {' -> '.join(c)}" for c in self.package_cycles]
                + [f"back import: {b}" for b in self.back_imports]
                + [f"private import: {p}" for p in self.private_imports])


def modules_of(root: Path) -> dict[str, Path]:
    """Return the dotted module name of every Python file of rag/, ui/, app_pages/, bench/ and app.py under root."""
    paths = [*root.glob("rag/**/*.py"), *root.glob("ui/**/*.py"), *root.glob("app_pages/**/*.py"),
             *root.glob("bench/**/*.py"), root / "app.py"]
    found = {}
    for path in paths:
        if not path.exists():
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def bound_names(path: Path) -> set[str]:
    """Return the names a package's __init__ binds at its top level (its face): imported, assigned or defined."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return names


def imports_of(name: str, path: Path, known: set[str], faces: dict[str, set[str]]) -> list[tuple[str, int]]:
    """Return the project modules one file imports (anywhere in it), each with the line of the import (faces: the
    names each package's __init__ binds)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import sub` imports the module pkg.sub, unless pkg's __init__ binds that name itself
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known
                       and alias.name not in faces.get(base, ()) else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import rag.store.edge.x` is not a thing; trim to a module
                target = target.rpartition(".")[0]
            if target and target != name and (target, node.lineno) not in found:
                found.append((target, node.lineno))
    return found


def layer_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int | None:
    """Return the index of a module's layer in layers (the longest matching prefix decides), None if unplaced."""
    best, best_length = None, -1
    for index, prefixes in enumerate(layers):
        for prefix in prefixes:
            inside = module.startswith(prefix + ".") and prefix not in WHOLE  # `rag` holds every layer: it is one file
            if (module == prefix or inside) and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    return best


def is_private(module: str, importer: str) -> bool:
    """Return whether a module sits behind the face of a stage or room (the innermost one holding it) that the
    importer is not part of (the package itself is its public face)."""
    if module in STAGES:  # a room's face is public too: rag.evaluation.metrics
        return False
    holders = [stage for stage in STAGES if module.startswith(stage + ".")]
    inner = max(holders, key=len, default=None)
    return inner is not None and importer != inner and not importer.startswith(inner + ".")


def cycles_in(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return each strongly connected group of more than one node (Tarjan), sorted, as a list of its nodes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def package_of(module: str) -> str:
    """Return the rag package (or top-level rag module) a module belongs to: rag.store.edge.api -> rag.store."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "rag" else parts[0]


def room_of(module: str, path: Path) -> str:
    """Return the package a module sits in (a package's __init__: the package; rag.pipeline: itself, a stage)."""
    if path.name == "__init__.py" or module.count(".") < 2:
        return module
    return module.rpartition(".")[0]


def check(root: Path) -> Report:
    """Return every cycle, back import and private import in the tree under root."""
    modules = modules_of(root)
    known = set(modules)
    faces = {name: bound_names(path) for name, path in modules.items() if path.name == "__init__.py"}
    report = Report()
    graph: dict[str, set[str]] = {}
    packages: dict[str, set[str]] = {}
    rooms: dict[str, set[str]] = {}  # the same between every (sub)package of rag, e.g. rag.evaluation.sweeps
    for name, path in sorted(modules.items()):
        room = room_of(name, path)
        for target, line in imports_of(name, path, known, faces):
            graph.setdefault(name, set()).add(target)
            if name.startswith("rag.") and target.startswith("rag.") and package_of(name) != package_of(target):
                packages.setdefault(package_of(name), set()).add(package_of(target))
            there = room_of(target, modules[target])
            face_of_it = path.name == "__init__.py" and there.startswith(room + ".")  # a face imports its rooms
            if name.startswith("rag.") and target.startswith("rag.") and room != there and not face_of_it:
                rooms.setdefault(room, set()).add(there)
            here, there = layer_of(name), layer_of(target)
            if here is None or there is None:
                report.back_imports.append(f"{name} -> {target} (line {line}): a module of no layer")
            elif there > here:
                report.back_imports.append(f"{name} -> {target} (line {line})")
            here, there = layer_of(name, ROOMS), layer_of(target, ROOMS)
            if here is not None and there is not None and there > here:
                report.back_imports.append(f"{name} -> {target} (line {line}): a lower room imports a higher")
            if is_private(target, name):
                report.private_imports.append(f"{name} -> {target} (line {line})")
    report.cycles = cycles_in(graph)
    report.package_cycles = cycles_in(packages) + [c for c in cycles_in(rooms) if c not in cycles_in(packages)]
    return report


def test_the_house_has_no_cycle_no_back_import_and_no_private_import():
    report = check(ROOT)
    counts = (f"{len(report.cycles)} cycles, {len(report.package_cycles)} package cycles, "
              f"{len(report.back_imports)} back imports, {len(report.private_imports)} private imports")
    assert not report.lines(), counts + ":\n" + "\n".join(report.lines())


def plant(root: Path, files: dict[str, str]) -> Path:
    """Return root after writing a tiny tree of Python files under it."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


CLEAN = {
    "rag/__init__.py": "",
    "rag/errors.py": "",
    "rag/store/__init__.py": "from rag.store.client import Store\n",
    "rag/store/client.py": "from rag.errors import RagError\n",
    "rag/pipeline.py": "from rag.store import Store\n",
    "ui/page.py": "import rag\nfrom rag.store import Store\n",
    "app.py": "from ui import page\n",
}


def test_a_clean_tree_passes(tmp_path):
    assert not check(plant(tmp_path, CLEAN)).lines()


def test_a_back_import_inside_a_function_is_found(tmp_path):
    tree = {**CLEAN, "rag/store/client.py": "def later():\n    from rag.pipeline import x\n"}
    report = check(plant(tmp_path, tree))
    assert report.back_imports == ["rag.store.client -> rag.pipeline (line 2)"]
    assert report.cycles == [["rag.pipeline", "rag.store", "rag.store.client"]]  # through the store's face
    assert report.package_cycles == [["rag.pipeline", "rag.store"]]


def test_a_cycle_between_two_files_of_one_layer_is_found(tmp_path):
    tree = {**CLEAN, "rag/store/a.py": "from rag.store import b\n", "rag/store/b.py": "from . import a\n"}
    report = check(plant(tmp_path, tree))
    assert report.cycles == [["rag.store.a", "rag.store.b"]] and not report.back_imports


def test_a_page_reaching_past_a_face_is_found(tmp_path):
    tree = {**CLEAN, "ui/page.py": "from rag.store import client\nfrom rag.store.client import Store\n"}
    report = check(plant(tmp_path, tree))
    assert report.private_imports == ["ui.page -> rag.store.client (line 1)", "ui.page -> rag.store.client (line 2)"]


def test_a_name_the_face_binds_is_not_its_module(tmp_path):
    """`from rag.store import gate` is the face's function gate when the __init__ imports it, not rag.store.gate."""
    tree = {**CLEAN, "rag/store/__init__.py": "from rag.store.gate import gate\n", "rag/store/gate.py": "",
            "ui/page.py": "from rag.store import gate\n"}
    assert not check(plant(tmp_path, tree)).lines()
    tree["rag/store/__init__.py"] = ""
    assert check(plant(tmp_path, tree)).private_imports == ["ui.page -> rag.store.gate (line 1)"]


def test_a_cycle_between_two_rooms_of_one_stage_is_found(tmp_path):
    tree = {**CLEAN, "rag/store/a/__init__.py": "from rag.store.a.x import X\n", "rag/store/a/z.py": "",
            "rag/store/a/x.py": "from rag.store.b import y\n", "rag/store/b/__init__.py": "",
            "rag/store/b/y.py": "def later():\n    from rag.store.a import z\n"}
    report = check(plant(tmp_path, tree))
    assert report.package_cycles == [["rag.store.a", "rag.store.b"]] and not report.cycles


def test_a_module_of_no_layer_is_named(tmp_path):
    report = check(plant(tmp_path, {**CLEAN, "rag/newstage.py": "from rag.errors import RagError\n"}))
    assert report.back_imports == ["rag.newstage -> rag.errors (line 1): a module of no layer"]

