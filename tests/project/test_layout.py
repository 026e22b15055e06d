"""The package's layers, read from the source: no import runs up them, not even a late one.

Layers, bottom up: the core's shared modules (``core/_*.py``: errors, types, text, ...);
the core's independent subpackages (models, llm, policy, observability); mitigation (uses
llm and policy); the engine (uses all of the core). The adapters, the service and the
evaluation harness are users of the core and never of each other. The core imports no
framework.

Two surfaces: users import the public packages; everything outside the core (adapters,
service, command line, harness, scripted test models) imports those and one internal
interface, ``core/_adapter_api.py`` (its own layer, on top of the core), and no other
private module of the core. The lab and the benchmarks, which are not installed, import
the public packages and one module of their own, ``truthlens_integrations/_lab_api.py``
(a layer on top of the whole product), which the product never imports.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._paths import REPO

ROOT = REPO
# folder in the repository -> its installed package
PACKAGES = {
    "core": "truthlens_integrations.core",
    "langchain_adapter": "truthlens_integrations.langchain_adapter",
    "llamaindex_adapter": "truthlens_integrations.llamaindex_adapter",
    "truthlens_integrations": "truthlens_integrations",
}
CORE_SUBPACKAGES = {"core.models", "core.llm", "core.policy", "core.observability"}
# the one private core module that the layers outside the core may import
ADAPTER_API = "truthlens_integrations.core._adapter_api"
# the one private module of the product that lab/ and benchmarks/ may import
LAB_API = "truthlens_integrations._lab_api"
# layer -> the layers it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "core.base": set(),
    **{name: {"core.base"} for name in CORE_SUBPACKAGES},
    # a claim checker behind an LLM endpoint reads claims through the LLM clients
    "core.models": {"core.base", "core.llm"},
    "core.mitigation": {"core.base", "core.llm", "core.policy"},
    "core.engine": {"core.base", "core.mitigation", *CORE_SUBPACKAGES},
    "core": {"core.base"},
    # the adapters' interface: on top of the core, it may use all of it
    "core.adapter_api": {"core", "core.base", "core.mitigation", "core.engine", *CORE_SUBPACKAGES},
    "langchain_adapter": {
        "core",
        "core.adapter_api",
        "core.engine",
        "core.mitigation",
        *CORE_SUBPACKAGES,
    },
    "llamaindex_adapter": {
        "core",
        "core.adapter_api",
        "core.engine",
        "core.mitigation",
        *CORE_SUBPACKAGES,
    },
    "serve": {"core", "core.adapter_api", "core.engine", *CORE_SUBPACKAGES},
    # the harness reports the package version (the face), and measures the core
    "evaluation": {"face", "core", "core.adapter_api", "core.models"},
    "face": {"core", "core.adapter_api", "core.engine", "core.models", "core.policy"},
    "face._cli": {
        "core",
        "core.adapter_api",
        "core.models",
        "face._cli_eval",
        "face._cli_calibrate",
        "serve",
        # detect reads the answer file calibrate and eval read (one reader, the harness's),
        # guards each answer with the engine and reports the package version (the face)
        "evaluation",
        "core.engine",
        "face",
    },
    "face._cli_eval": {
        "core",
        "core.adapter_api",
        "core.models",
        "evaluation",
        "face._claim_fit",
    },
    "face._cli_calibrate": {
        "core",
        "core.adapter_api",
        "core.models",
        "evaluation",
        "face._claim_fit",
    },
    # the claim checker fitted and measured for calibrate and eval (it reads the policy)
    "face._claim_fit": {"core", "core.adapter_api", "core.policy", "evaluation"},
    # scripted chat models for the guide's snippets and users' tests
    "face.testing": {"core", "core.adapter_api"},
    # the lab's interface: on top of the whole product, it hands the lab what is private
    "face._lab_api": {
        "face",
        "core",
        "core.base",
        "core.mitigation",
        "core.engine",
        *CORE_SUBPACKAGES,
        "evaluation",
        "serve",
    },
}
FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "llama_index", "ray", "fastapi")


def _modules() -> Iterator[tuple[Path, str, bool]]:
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "_bundled" in path.parts:
                continue
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            dotted = ".".join([package, *(p for p in parts if p != "__init__")])
            yield path, dotted, is_package


def _layer(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return "face"
    if parts[0] == "core":
        if len(parts) == 1:
            return "core"
        if module == ADAPTER_API:
            return "core.adapter_api"
        return "core.base" if parts[1].startswith("_") else f"core.{parts[1]}"
    if parts[0] in {"langchain_adapter", "llamaindex_adapter", "evaluation", "serve"}:
        return parts[0]
    return f"face.{parts[0]}"


def _import_statements(
    path: Path, module: str, is_package: bool
) -> Iterator[tuple[str, list[str]]]:
    """``(imported module, names taken from it)`` per import, relative ones made absolute.

    ``import a.b`` gives ``("a.b", [])``; ``from . import x`` in package ``p`` gives
    ``("p", ["x"])``.
    """
    package = module if is_package else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            yield base, [alias.name for alias in node.names]


def _imports(path: Path, module: str, is_package: bool) -> Iterator[str]:
    yield from (base for base, _ in _import_statements(path, module, is_package))


def _edges() -> Iterator[tuple[str, str, str]]:
    """``(file, its layer, imported module)`` for every import in the package."""
    for path, module, is_package in _modules():
        for target in _imports(path, module, is_package):
            yield path.relative_to(ROOT).as_posix(), _layer(module), target


def test_every_module_is_in_a_known_layer() -> None:
    layers = {_layer(module) for _, module, _ in _modules()}
    assert layers <= set(ALLOWED), layers - set(ALLOWED)


def test_no_import_runs_up_the_layers() -> None:
    wrong = [
        f"{file} ({layer}) imports {target} ({_layer(target)})"
        for file, layer, target in _edges()
        if target.startswith("truthlens_integrations")
        and _layer(target) != layer
        and _layer(target) not in ALLOWED[layer]
    ]
    assert not wrong, "\n".join(wrong)


# the lab's interface reaches the core's private modules on purpose (tested below)
OUTSIDE_THE_CORE = [
    layer for layer in ALLOWED if not layer.startswith("core") and layer != "face._lab_api"
]


@pytest.mark.parametrize("layer", OUTSIDE_THE_CORE)
def test_outside_the_core_only_public_modules_and_the_adapter_api(layer: str) -> None:
    # the adapters, the service, the command line, the harness and the test models
    private = [
        f"{file} imports {target}"
        for file, importer, target in _edges()
        if importer == layer
        and target.startswith("truthlens_integrations.core")
        and target != ADAPTER_API
        and any(part.startswith("_") for part in target.split(".")[2:])
    ]
    assert not private, "\n".join(private)


def test_the_adapter_api_is_internal_and_the_core_never_uses_it() -> None:
    from truthlens_integrations.core import _adapter_api

    # a name is either public (pinned) or the adapters' (listed here), never both
    pinned = json.loads((ROOT / "tests" / "data" / "public_api.json").read_text("utf-8"))
    assert not set(_adapter_api.__all__) & {name for names in pinned.values() for name in names}
    users = {file for file, layer, target in _edges() if target == ADAPTER_API}
    assert users and not {file for file in users if file.startswith("core/")}
    # every name it lists resolves (the lazy ones import their module)
    assert all(getattr(_adapter_api, name) is not None for name in _adapter_api.__all__)


# the folders that use the product from outside it, without being installed
LAB_FOLDERS = ("lab", "benchmarks")


def _product_imports(path: Path, module: str, is_package: bool) -> Iterator[str]:
    """Every module and name of the product that ``path`` imports (``a.b`` and ``a.b.name``)."""
    for base, names in _import_statements(path, module, is_package):
        if base.split(".")[0] == "truthlens_integrations":
            yield base
            yield from (f"{base}.{name}" for name in names)


def _lab_imports() -> Iterator[tuple[str, str]]:
    """``(file, imported module or name)`` for every import of the product in the lab."""
    for folder in LAB_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            dotted = ".".join(p for p in parts if p != "__init__")
            file = path.relative_to(ROOT).as_posix()
            yield from ((file, target) for target in _product_imports(path, dotted, is_package))


def _behind_the_fence(target: str) -> bool:
    """Whether the lab may not import ``target``: a private module or name but the lab's API."""
    if target == LAB_API or target.startswith(f"{LAB_API}."):
        return False
    # a dunder (``__version__``) is public; ``_x`` anywhere below the package is not
    return any(part.startswith("_") and not part.startswith("__") for part in target.split(".")[1:])


def test_the_lab_fence_sees_every_form_of_import(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        "import truthlens_integrations.core._text\n"
        "from truthlens_integrations.core import DetectionInput, _scoring\n"
        "from truthlens_integrations.evaluation._readers import read_snli\n"
        "from truthlens_integrations import __version__, _lab_api\n"
        "from truthlens_integrations._lab_api import words\n"
        "def late():\n"
        "    from truthlens_integrations.core.models.detection._rules import conflict_marks\n",
        encoding="utf-8",
    )
    found = {
        t for t in _product_imports(script, "lab.script", is_package=False) if _behind_the_fence(t)
    }
    assert found == {
        "truthlens_integrations.core._text",
        "truthlens_integrations.core._scoring",
        "truthlens_integrations.evaluation._readers",
        "truthlens_integrations.evaluation._readers.read_snli",
        "truthlens_integrations.core.models.detection._rules",
        "truthlens_integrations.core.models.detection._rules.conflict_marks",
    }


def test_the_lab_reaches_the_product_only_through_public_names_and_the_lab_api() -> None:
    # ``import a._b``, ``from a._b import c`` and ``from a import _b`` alike, late ones too
    private = sorted(
        f"{file} imports {target}" for file, target in _lab_imports() if _behind_the_fence(target)
    )
    assert not private, "\n".join(private)


def test_the_lab_api_is_the_labs_alone() -> None:
    from truthlens_integrations import _lab_api

    # the product never imports it, not even late
    users = {
        path.relative_to(ROOT).as_posix()
        for path, module, is_package in _modules()
        if LAB_API in _module_imports(path, module, is_package)
    }
    assert not users, users
    # it lists what the lab and the benchmarks import from it, and nothing more
    wanted = {
        target.removeprefix(f"{LAB_API}.")
        for _, target in _lab_imports()
        if target.startswith(f"{LAB_API}.")
    }
    assert wanted and wanted == set(_lab_api.__all__), wanted ^ set(_lab_api.__all__)
    assert set(_lab_api._LAZY) == set(_lab_api.__all__)
    # a name the product already makes public is imported from there, not from here
    pinned = json.loads((ROOT / "tests" / "data" / "public_api.json").read_text("utf-8"))
    assert not set(_lab_api.__all__) & {name for names in pinned.values() for name in names}
    # every name it lists resolves (the lazy ones import their module), but the service's:
    # importing its module starts Ray (the serve extra), so that module's source is read
    for name, (module, attribute) in _lab_api._LAZY.items():
        if module.startswith("truthlens_integrations.serve."):
            assert attribute in _top_level_names(module), name
        else:
            assert getattr(_lab_api, name) is not None, name


def _top_level_names(module: str) -> set[str]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    return {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    } | {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def test_the_core_imports_no_framework() -> None:
    found = [
        f"{file} imports {target}"
        for file, layer, target in _edges()
        if layer.startswith("core") and target.split(".")[0] in FRAMEWORKS
    ]
    assert not found, "\n".join(found)


def test_the_evaluation_harness_is_outside_the_core() -> None:
    assert not (ROOT / "core" / "evaluation").exists()
    assert (ROOT / "truthlens_integrations" / "evaluation" / "__init__.py").is_file()


# what is in the repository and never installed: the product imports none of it
NOT_INSTALLED = ("lab", "training", "benchmarks", "tests", "cookbook", "scripts")


def test_the_product_never_imports_the_lab() -> None:
    found = [
        f"{file} imports {target}"
        for file, _, target in _edges()
        if target.split(".")[0] in NOT_INSTALLED
    ]
    assert not found, "\n".join(found)


def test_model_code_has_one_home() -> None:
    # Every classifier the guard runs (detector, NLI, prompt classifier) lives in
    # core/models; outside it only the device helper and the local LLM backend use torch.
    outside = {
        file
        for file, layer, target in _edges()
        if target.split(".")[0] in {"torch", "transformers"} and layer != "core.models"
    }
    assert outside == {"core/_device.py", "core/llm/_local.py"}


def _package_files() -> Iterator[Path]:
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "_bundled" not in path.parts:
                yield path


def test_no_package_function_is_over_60_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)"
        for path in _package_files()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > 60
    ]
    assert not long, "\n".join(long)


def test_the_engine_module_stays_small() -> None:
    lines = (ROOT / "core" / "engine" / "_engine.py").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 450


def _raised_names(path: Path) -> Iterator[tuple[int, str, str]]:
    """``(line, raised class, enclosing function)`` for every ``raise Class(...)``.

    Lower-case callees are the package's error builders (``invalid_arguments``), not classes.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name[:1].isupper():
                    yield node.lineno, name, function.name


@pytest.mark.parametrize("adapter", ["langchain_adapter", "llamaindex_adapter"])
def test_adapters_raise_only_the_package_errors(adapter: str) -> None:
    from truthlens_integrations.core import _errors

    ours = {name for name, value in vars(_errors).items() if isinstance(value, type)}
    wrong = [
        f"{path.relative_to(ROOT)}:{line} raises {name}"
        for path in sorted((ROOT / adapter).rglob("*.py"))
        for line, name, function in _raised_names(path)
        # a module's __getattr__ must raise AttributeError: that is Python's protocol
        if name not in ours and not (function == "__getattr__" and name == "AttributeError")
    ]
    assert not wrong, "\n".join(wrong)


def _module_imports(path: Path, module: str, is_package: bool) -> Iterator[str]:
    """Every module ``path`` may import, late imports included (``from . import x`` as ``.x``)."""
    for base, names in _import_statements(path, module, is_package):
        yield base
        yield from (f"{base}.{name}" for name in names)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected parts of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_in_the_product_or_the_lab() -> None:
    modules = list(_modules())
    for path in sorted((ROOT / "lab" / "training").glob("*.py")):
        name = "lab.training" if path.stem == "__init__" else f"lab.training.{path.stem}"
        modules.append((path, name, path.stem == "__init__"))
    packages = {name for _, name, is_package in modules if is_package}
    files = {name for _, name, is_package in modules if not is_package}
    graph: dict[str, set[str]] = {}
    for path, name, is_package in modules:
        if is_package:
            continue  # an __init__ assembles its package's public names: not a file's circle
        graph[name] = set(_module_imports(path, name, is_package)) & files - {name}
    assert packages and graph
    assert _cycles(graph) == []
