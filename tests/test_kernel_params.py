"""The kernel record (okl.kernels.kernel_params) and the estimators' kernel_params dict.

A kernel's own parameter travels by name from the registry to the loops: no estimator,
model or loop lists it (docs/architecture.md, "Adding things").  The compiled struct cannot
gain a field at run time, so the plumbing is proven on the NumPy engine with a parameter
added to the registry for the test; the compiled side is pinned to the same fields.
"""
import dataclasses
import io
import json

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

import okl
from okl import (CoefficientRegularizedClassifier, OnlineKernelClassifier, OnlineKernelRegressor,
                 PairwiseLearner, RegularizedPAClassifier)
from okl._core._expansion import KernelExpansion
from okl._numpy import kernels as twin
from okl._params import InvalidParameterError
from okl.kernels import KERNEL_PARAMS, KERNELS, kernel_params

LEARNERS = [OnlineKernelRegressor, OnlineKernelClassifier, CoefficientRegularizedClassifier,
            RegularizedPAClassifier, PairwiseLearner]


def _data(n=120):
    X, y = load_diabetes(return_X_y=True)
    X = (X[:n] - X[:n].mean(axis=0)) / X[:n].std(axis=0)
    return X, (y[:n] - y[:n].mean()) / y[:n].std()


def test_the_record_has_every_parameter_typed_and_the_compiled_spec_has_the_same_fields():
    record = kernel_params("matern", gamma=2, nu=2.5)
    assert record == dict(kernel=int(KERNELS["matern"].code), gamma=2.0, degree=3, coef0=0.0,
                          nu=2.5)
    assert type(record["gamma"]) is float and type(record["degree"]) is int
    assert KERNEL_PARAMS is twin.PARAMS
    # the compiled record round-trips through KernelSpec with exactly these fields
    assert KernelExpansion(2, record).kernel_params == record
    with pytest.raises(ValueError, match="nu"):          # the compiled spec needs every field
        KernelExpansion(2, {k: v for k, v in record.items() if k != "nu"})
    with pytest.raises(TypeError, match="Unknown kernel parameters"):
        kernel_params("gaussian", width=1.0)


@pytest.mark.parametrize("cls", LEARNERS)
def test_every_kernel_learner_takes_kernel_params_checked_by_the_kernels_row(cls):
    assert cls().get_params()["kernel_params"] is None
    X, y = _data(60)
    target = y if cls is OnlineKernelRegressor or cls is PairwiseLearner else np.sign(y)
    kw = dict(kernel="matern", gamma=0.2)
    with pytest.raises(InvalidParameterError, match=r"no parameter 'alpha'; its parameters "
                                                    r"are: gamma, nu"):
        cls(kernel_params={"alpha": 1.0}, **kw).fit(X, target)
    with pytest.raises(InvalidParameterError, match=r"set nu=2.5 there"):
        cls(kernel_params={"nu": 2.5}, **kw).fit(X, target)
    with pytest.raises(InvalidParameterError, match="'kernel_params' parameter"):
        cls(kernel_params=[("nu", 2.5)], **kw).fit(X, target)
    a = cls(**kw).fit(X, target)
    b = cls(kernel_params={}, **kw).fit(X, target)
    score = "predict" if cls is OnlineKernelRegressor else "decision_function"
    args = (X[:20], X[20:40]) if cls is PairwiseLearner else (X,)
    np.testing.assert_array_equal(getattr(a, score)(*args), getattr(b, score)(*args))


@pytest.fixture
def alpha(monkeypatch):
    """A parameter of the Matern row that no estimator names, added to the registry (and so
    to the NumPy twin's record) for one test."""
    monkeypatch.setitem(twin.PARAMS, "alpha", 0.0)
    row = KERNELS["matern"]
    monkeypatch.setitem(KERNELS, "matern", dataclasses.replace(row, params=row.params + ("alpha",)))


@pytest.mark.parametrize("extra", [{}, {"budget": 30},
                                   {"approximation": "nystroem", "n_components": 20}])
def test_a_new_kernel_parameter_reaches_the_twin_and_a_file_without_editing_any_estimator(
        alpha, extra, tmp_path):
    X, y = _data()
    est = OnlineKernelRegressor(kernel="matern", gamma=0.2, kernel_params={"alpha": 2.0},
                                engine="numpy", **extra).fit(X[:15], y[:15])
    model = est._expansion
    record = (model.kernel_params if hasattr(model, "kernel_params") else model.params)
    assert record["alpha"] == 2.0 and record["nu"] == 1.5
    est.partial_fit(X[15:], y[15:])
    path = tmp_path / "m.npz"
    okl.save(est, path)
    loaded = okl.load(path)
    assert loaded.kernel_params == {"alpha": 2.0}
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    est.set_params(kernel_params={"alpha": 3.0})
    with pytest.raises(ValueError, match="kernel_params"):
        est.partial_fit(X[:5], y[:5])
    with pytest.raises(InvalidParameterError, match="alpha.*must be a number"):
        OnlineKernelRegressor(kernel="matern", kernel_params={"alpha": "big"}).fit(X, y)


def test_an_estimator_parameter_of_a_kernel_parameter_s_name_stays_the_estimator_s(alpha):
    # the PA's own alpha (its regularization) is no kernel parameter: the record takes the
    # kernel's alpha from kernel_params only
    X, y = _data()
    est = RegularizedPAClassifier(kernel="matern", gamma=0.2, alpha=0.3, budget=40,
                                  kernel_params={"alpha": 2.0}, engine="numpy")
    est.fit(X, np.sign(y))
    assert est._model.expansion.kernel_params["alpha"] == 2.0
    assert RegularizedPAClassifier(kernel="matern", alpha=0.3, engine="numpy").fit(
        X, np.sign(y))._model.expansion.kernel_params["alpha"] == 0.0


def _without(path, names):
    """The file at `path` as an older okl wrote it: without the parameters `names` anywhere."""
    with np.load(path) as data:
        header = json.loads(bytes(data["__header__"]).decode())
        arrays = {k: data[k] for k in data.files if k != "__header__"}

    def strip(d):
        return {k: strip(v) if isinstance(v, dict) else v for k, v in d.items()
                if k.split("_")[-1] not in names and k not in names}
    header = strip(header)
    frozen = header["attrs"].get("_params")         # a PairwiseLearner's frozen parameters
    if frozen is not None and "kernel_params" in names:
        del frozen[PairwiseLearner._FROZEN.index("kernel_params")]
    buffer = io.BytesIO()
    np.savez(buffer, __header__=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)
    path.write_bytes(buffer.getvalue())


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_a_file_without_kernel_params_nor_a_later_kernel_parameter_loads(engine, tmp_path):
    X, y = _data()
    for est in (OnlineKernelRegressor(kernel="matern", gamma=0.2, engine=engine).fit(X, y),
                OnlineKernelRegressor(gamma=0.2, approximation="fourier", random_state=0,
                                      engine=engine).fit(X, y),
                RegularizedPAClassifier(kernel="matern", gamma=0.2, approximation="nystroem",
                                        n_components=20, engine=engine).fit(X, np.sign(y)),
                PairwiseLearner(kernel="matern", gamma=0.2, pair_kernel="difference",
                                reducer="difference", loss="squared", engine=engine).fit(X, y)):
        path = tmp_path / "m.npz"
        okl.save(est, path)
        _without(path, ("kernel_params", "nu"))
        with np.load(path) as data:
            text = bytes(data["__header__"]).decode()
        assert "kernel_params" not in text and '"nu"' not in text
        loaded = okl.load(path)
        assert loaded.kernel_params is None and loaded.nu == 1.5
        score = "predict" if isinstance(est, OnlineKernelRegressor) else "decision_function"
        args = (X[:50], X[50:100]) if isinstance(est, PairwiseLearner) else (X,)
        np.testing.assert_array_equal(getattr(loaded, score)(*args), getattr(est, score)(*args))


@pytest.mark.parametrize("nu", [0.5, 2.5])
def test_the_multiclass_coefreg_scores_with_its_own_nu(nu):
    # its k >= 3 decision builds a kernel matrix: from the record, so with the model's nu
    X, y = _data(90)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    est = CoefficientRegularizedClassifier(kernel="matern", nu=nu, gamma=0.2, n_centers=30,
                                           lam=1e-2).fit(X, labels)
    K = okl.kernels.kernel_matrix(X, est.centers_, "matern", gamma=0.2, nu=nu)
    np.testing.assert_allclose(est.decision_function(X), K @ est.coef_, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("extra", [{}, {"approximation": "fourier", "random_state": 0}])
@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_the_record_survives_pickling_and_averaging(extra, engine):
    import pickle

    from okl._averaging import average_models, divergence
    X, y = _data()
    models = [OnlineKernelRegressor(kernel="matern", nu=2.5, gamma=0.2, kernel_params={},
                                    engine=engine, **extra).fit(X[i::2], y[i::2])
              for i in range(2)]
    copy = pickle.loads(pickle.dumps(models[0]))
    np.testing.assert_array_equal(copy.predict(X), models[0].predict(X))
    average = average_models(models)
    model = average._expansion
    record = model.kernel_params if hasattr(model, "kernel_params") else model.params
    assert record["nu"] == 2.5 and record["gamma"] == 0.2
    assert abs(divergence(models[0], models[0])) < 1e-20
    np.testing.assert_allclose(average.predict(X), 0.5 * (models[0].predict(X)
                                                          + models[1].predict(X)), atol=1e-9)
