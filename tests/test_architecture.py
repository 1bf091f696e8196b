"""The house's rules (docs/architecture.md): imports run downwards, no import circles."""
import ast
from pathlib import Path

import okl

# docs/architecture.md, "Layers": a module may import its own layer and those below
LAYERS = [
    ("engines", ("okl._core", "okl._numpy", "okl._engines")),
    ("registries", ("okl.kernels", "okl.losses", "okl.budgets", "okl.schedules", "okl._params",
                    "okl._gamma", "okl._feature_maps", "okl._locks", "okl._blas", "okl._warnings",
                    "okl._sparse", "okl._progress", "okl._rows", "okl.stream", "okl.synth",
                    "okl.projections", "okl._docstrings", "okl.drift")),
    ("template and models", ("okl._base", "okl._one_event", "okl._kernel_learners",
                             "okl._labels", "okl._feature_model", "okl._pa_models",
                             "okl._pair_models", "okl._persist", "okl._adapt")),
    ("estimators", ("okl.regression", "okl.classification", "okl.passive_aggressive",
                    "okl.pairwise", "okl.preprocessing", "okl.pipeline", "okl.multikernel",
                    "okl.krls", "okl.conformal")),
    ("tools", ("okl.evaluation", "okl.distributed", "okl.river", "okl._averaging",
               "okl._demo")),
    ("facade", ("okl.__init__", "okl.__main__")),
]


def layer(name):
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return i
    raise AssertionError(f"{name} is in no layer of docs/architecture.md")


def modules():
    root = Path(okl.__file__).parent
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 2 else parts)
        yield name, path


def imports(path):
    """The okl modules a file imports, at module level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("okl"):
            if node.module == "okl":        # from okl import _locks: the submodule itself
                root = Path(okl.__file__).parent
                found.update(f"okl.{a.name}" if (root / f"{a.name}.py").exists()
                             or (root / a.name).is_dir() else "okl" for a in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("okl"))
    return found


def test_imports_run_downwards_and_in_no_circle():
    graph = {name: imports(path) for name, path in modules()}
    up = [f"{name} -> {dep}" for name, deps in graph.items() for dep in deps
          if dep != "okl" and layer(dep) > layer(name)]
    assert not up, up

    done = set()

    def visit(name, stack):
        if name in stack:
            raise AssertionError("import circle: " + " -> ".join(stack[stack.index(name):]
                                                                 + [name]))
        if name in done:
            return
        for dep in graph.get(name, ()):
            if dep in graph and dep != name:
                visit(dep, stack + [name])
        done.add(name)
    for name in graph:
        visit(name, [])
