"""okl: online kernel learning with a typed-Cython core.

The public names are imported when first used (PEP 562), so that the command line answers
``okl --help`` without loading scikit-learn.
"""
from importlib import import_module
from importlib.metadata import version

__version__ = version("okl")     # set once, in meson.build's project()

# each public name: the module it comes from (a module's own name: the module)
_PUBLIC = {
    "CoefficientRegularizedClassifier": "okl.classification",
    "ConformalClassifier": "okl.conformal",
    "ConformalRegressor": "okl.conformal",
    "KernelRLSRegressor": "okl.krls",
    "ModelFileError": "okl._persist",
    "MultiKernelClassifier": "okl.multikernel",
    "MultiKernelRegressor": "okl.multikernel",
    "OnlineKernelClassifier": "okl.classification",
    "OnlineKernelRegressor": "okl.regression",
    "PairwiseLearner": "okl.pairwise",
    "RegularizedPAClassifier": "okl.passive_aggressive",
    "drift": "okl.drift",
    "evaluation": "okl.evaluation",
    "kernels": "okl.kernels",
    "load": "okl._persist",
    "losses": "okl.losses",
    "pipeline": "okl.pipeline",
    "preprocessing": "okl.preprocessing",
    "projections": "okl.projections",
    "save": "okl._persist",
    "schedules": "okl.schedules",
    "stream": "okl.stream",
    "synth": "okl.synth",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'okl' has no attribute {name!r}")
    if name == "load":       # okl.load builds any estimator: every public module registers its own
        for module in set(_PUBLIC.values()):
            import_module(module)
    module = import_module(where)
    value = module if where == f"okl.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_PUBLIC})
