"""The engine table and the NumPy engine's independence from the compiled module."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from okl._core import _expansion, _kernels, _losses, _pa, _pairwise, _pointwise
from okl.kernels import kernel_params
from okl._engines import ENGINES, engine_of
from okl._numpy import codes


@pytest.mark.parametrize("compiled, pure", [
    (_kernels.Kernel, codes.Kernel), (_losses.Loss, codes.Loss),
    (_expansion.BudgetPolicy, codes.BudgetPolicy), (_pointwise.StepSize, codes.StepSize),
    (_pointwise.Offset, codes.Offset),
    (_pairwise.Reducer, codes.Reducer), (_pa.Event, codes.Event),
    (_pa.Regularization, codes.Regularization), (_pa.Variant, codes.Variant)])
def test_the_numpy_codes_are_the_cython_enums(compiled, pure):
    assert {m.name: int(m) for m in compiled} == {m.name: int(m) for m in pure}


def test_every_engine_has_every_piece_and_models_know_their_engine():
    assert ENGINES["cython"].__dict__.keys() == ENGINES["numpy"].__dict__.keys()
    for name, engine in ENGINES.items():
        assert engine_of(engine.expansion(2, kernel_params("gaussian"))) == name
        assert engine_of(engine.linear(3)) == name
    with pytest.raises(TypeError, match="no engine"):
        engine_of(object())


def test_the_numpy_engine_runs_without_the_compiled_module():
    """The NumPy engine is the readable specification: it imports nothing compiled."""
    script = textwrap.dedent("""
        import importlib.abc, importlib.util, os, sys, types
        import numpy as np

        class NoCompiled(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "okl._core" or name.startswith("okl._core."):
                    raise ImportError(f"{name} is blocked")
        sys.meta_path.insert(0, NoCompiled())
        home = os.path.dirname(importlib.util.find_spec("okl").origin)
        okl = types.ModuleType("okl")          # the package without its facade
        okl.__path__ = [home]
        sys.modules["okl"] = okl

        from okl._numpy import coefreg, expansion, linear, pa, pairwise, pointwise, projections
        from okl._numpy.codes import Kernel, Loss
        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(200, 3)), rng.normal(size=200)
        from okl._numpy.kernels import kernel_record
        kernel = kernel_record(dict(kernel=int(Kernel.GAUSSIAN), gamma=0.5), complete=True)
        model = expansion.NumpyExpansion(3, kernel, 50, 2)
        loss = dict(kind=int(Loss.HUBER), tau=0.5, eps=0.0, delta=1.0, p=2.0)
        failed, state = pointwise.fit_chunk(model, X, y, pointwise.make_schedule(1, 0.5, 0.5),
                                            loss, pointwise.make_state(), np.empty(200))
        assert failed == -1 and state["t"] == 200 and model.n_support == 50
        assert not any(name.startswith("okl._core") for name in sys.modules)
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
