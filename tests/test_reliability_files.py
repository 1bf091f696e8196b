"""Files that never lie: what okl.save writes, okl.load reads, checked against everything a
prediction depends on; pipelines and nested estimators saved without pickle; `expected=`.
"""
import io
import json
import warnings

import numpy as np
import pytest
from sklearn.base import clone

import okl
from okl import (
    OnlineKernelClassifier,
    OnlineKernelRegressor,
    PairwiseLearner,
    RegularizedPAClassifier,
)
from okl.pipeline import StreamPipeline
from okl.preprocessing import OnlineStandardScaler


def _data(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]), (X[:, 0] > 0).astype(int)


def _blob(est):
    buffer = io.BytesIO()
    okl.save(est, buffer)
    return buffer.getvalue()


def _edited(blob, edit):
    with np.load(io.BytesIO(blob)) as data:
        header = json.loads(bytes(data["__header__"]).decode())
        arrays = {k: data[k] for k in data.files if k != "__header__"}
    edit(header, arrays)
    out = io.BytesIO()
    np.savez(out, __header__=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
             **arrays)
    out.seek(0)
    return out


# ---- issue 38, item 2: everything a prediction depends on is checked at load ---------------

NYSTROEM = {
    "regressor": lambda: OnlineKernelRegressor(approximation="nystroem", n_components=20),
    "classifier": lambda: OnlineKernelClassifier(approximation="nystroem", n_components=20),
    "pa": lambda: RegularizedPAClassifier(kernel="gaussian", approximation="nystroem",
                                          n_components=20),
    "fourier-regressor": lambda: OnlineKernelRegressor(approximation="fourier", n_components=20,
                                                       random_state=0),
}


@pytest.mark.parametrize("name", sorted(NYSTROEM))
@pytest.mark.parametrize("field, value, match", [
    ("fmap_gamma", 3.0, "fmap_gamma"),         # the map's width: it predicted something else
    ("fmap_tol", 0.99, "features"),            # its tolerance: "Z has 0 columns" in predict
])
def test_an_edited_feature_map_is_refused_at_load(name, field, value, match):
    X, y, labels = _data()
    est = NYSTROEM[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y if "regressor" in name else labels)
    key = "_model" if name == "pa" else "_expansion"
    if name.startswith("fourier") and field == "fmap_tol":
        field, value, match = "fmap_n_features", 7, "fmap_n_features"
    blob = _blob(est)

    def edit(header, arrays):
        header["objects"][key]["scalars"][field] = value
    with pytest.raises(okl.ModelFileError, match=match):
        okl.load(_edited(blob, edit))
    np.testing.assert_array_equal(okl.load(io.BytesIO(blob)).predict(X), est.predict(X))


@pytest.mark.parametrize("field", ["history_s", "history_gram"])
def test_a_difference_models_caches_are_what_its_function_gives(field):
    """The stored points' g(x_j) and Gram matrix are checked against g: an edited cache
    loaded and then steered every later step."""
    X, y, _ = _data()
    est = PairwiseLearner(pair_kernel="difference", buffer=30, random_state=0).fit(X, y)

    def edit(header, arrays):
        arrays[f"obj:_model:{field}"] = arrays[f"obj:_model:{field}"] * 1.5 + 0.1
    with pytest.raises(okl.ModelFileError, match=field):
        okl.load(_edited(_blob(est), edit))


@pytest.mark.parametrize("field, value", [("theta_", 0.5), ("eta1_", 0.3)])
def test_pairwise_step_constants_agree_with_the_parameters(field, value):
    X, y, _ = _data()
    est = PairwiseLearner(eta=0.1).fit(X, y)

    def edit(header, arrays):
        header["attrs"][field] = value
    with pytest.raises(okl.ModelFileError, match=field):
        okl.load(_edited(_blob(est), edit))


def test_an_edited_scaler_is_refused():
    X, _, _ = _data()
    scaler = OnlineStandardScaler().fit(X)

    def edit(header, arrays):
        arrays["attr:var_"] = arrays["attr:var_"] * 2.0
    with pytest.raises(okl.ModelFileError, match="var_"):
        okl.load(_edited(_blob(scaler), edit))


# ---- issue 38, item 3: a model never refuses its own file ------------------------------------

def test_a_classes_change_after_fit_is_refused_when_it_is_made(tmp_path):
    """set_params(classes=[0, 1, 2]) after fit: partial_fit and okl.save succeeded and
    okl.load then refused the file; now set_params itself refuses, the model unchanged."""
    X, _, labels = _data()
    est = OnlineKernelClassifier().fit(X[:50], labels[:50])
    before = est.decision_function(X)
    with pytest.raises(ValueError, match=r"set_params cannot change classes=\[0, 1, 2\] "
                                         r"\(fitted with classes_ \[0, 1\]\).*clone"):
        est.set_params(classes=[0, 1, 2], lam=0.5)
    assert est.classes is None and est.lam != 0.5           # nothing was set
    est.set_params(classes=[1, 0])                  # the labels it holds: taken
    est.partial_fit(X[50:60], labels[50:60])
    okl.save(est, tmp_path / "m.okl")
    np.testing.assert_array_equal(okl.load(tmp_path / "m.okl").predict(X), est.predict(X))
    assert not np.array_equal(est.decision_function(X), before)
    fresh = clone(est).set_params(classes=[0, 1, 2]).fit(X[:50], labels[:50])
    assert fresh.classes_.tolist() == [0, 1, 2]


def test_classes_written_past_set_params_are_refused_where_they_would_matter(tmp_path):
    """An attribute written directly is not seen by set_params: partial_fit and okl.save
    still refuse it."""
    X, _, labels = _data()
    est = OnlineKernelClassifier().fit(X[:50], labels[:50])
    est.classes = [0, 1, 2]
    with pytest.raises(ValueError, match=r"classes=\[0, 1, 2\]"):
        est.partial_fit(X[50:60], labels[50:60])
    with pytest.raises(ValueError, match="okl.save"):
        okl.save(est, tmp_path / "m.okl")
    est.set_params(classes=None)
    okl.save(est, tmp_path / "m.okl")
    np.testing.assert_array_equal(okl.load(tmp_path / "m.okl").predict(X), est.predict(X))


@pytest.mark.parametrize("make, param, value", [
    (lambda: OnlineKernelRegressor(), "gamma", 5.0),
    (lambda: PairwiseLearner(), "gamma", 5.0),
    (lambda: RegularizedPAClassifier(), "kernel", "gaussian"),
])
def test_okl_save_refuses_a_parameter_the_fitted_model_cannot_take(make, param, value,
                                                                  tmp_path):
    X, y, labels = _data()
    est = make()
    est.fit(X, labels if isinstance(est, RegularizedPAClassifier) else y)
    est.set_params(**{param: value})
    with pytest.raises(ValueError, match=f"okl.save.*{param}="):
        okl.save(est, tmp_path / "m.okl")
    est.fit(X, labels if isinstance(est, RegularizedPAClassifier) else y)   # fit takes them
    okl.save(est, tmp_path / "m.okl")
    assert okl.load(tmp_path / "m.okl").get_params()[param] == value


# ---- issue 37, item 5: pipelines and nested estimators ------------------------------------------

def test_a_pipeline_saves_and_loads_without_pickle(tmp_path):
    X, y, _ = _data()
    X = 100.0 + 30.0 * X
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelRegressor(budget=50))])
    for xi, yi in zip(X[:80], y[:80]):
        pipe.learn_one({"a": xi[0], "b": xi[1], "c": xi[2]}, float(yi))
    okl.save(pipe, tmp_path / "pipe.okl")
    again = okl.load(tmp_path / "pipe.okl", expected=StreamPipeline)
    event = {"a": X[90, 0], "b": X[90, 1], "c": X[90, 2]}
    assert again.predict_one(event) == pipe.predict_one(event)
    for other in (pipe, again):             # both go on learning alike
        other.learn_one(event, 0.5)
    assert again.predict_one(event) == pipe.predict_one(event)
    with np.load(tmp_path / "pipe.okl", allow_pickle=False) as data:
        header = json.loads(bytes(data["__header__"]).decode())
    assert header["params"]["steps"] == [["scale", {"estimator": 0}],
                                         ["learn", {"estimator": 1}]]


def test_a_pipeline_with_a_step_okl_cannot_store_is_refused_clearly(tmp_path):
    from sklearn.preprocessing import StandardScaler
    X, y, _ = _data()
    pipe = StreamPipeline([("scale", StandardScaler()), ("learn", OnlineKernelRegressor())])
    pipe.partial_fit(X, y)
    with pytest.raises(TypeError, match="'steps' is an estimator okl.save cannot store"):
        okl.save(pipe, tmp_path / "pipe.okl")


def test_a_nested_estimator_is_checked_as_a_file_of_its_own():
    X, y, _ = _data()
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelRegressor())]).partial_fit(X, y)
    blob = _blob(pipe)

    def edit(header, arrays):
        arrays["est1:obj:_expansion:sqnorms"] = arrays["est1:obj:_expansion:sqnorms"] + 1.0
    with pytest.raises(okl.ModelFileError, match="sqnorms"):
        okl.load(_edited(blob, edit))

    def twice(header, arrays):
        header["params"]["steps"][1][1] = {"estimator": 0}
    with pytest.raises(okl.ModelFileError, match="twice|refers"):
        okl.load(_edited(blob, twice))


def test_a_wrapper_holding_an_estimator_saves_through_the_hook(tmp_path, monkeypatch):
    """The documented hook: a `loadable` class whose parameter (or fitted attribute) is an
    okl estimator is saved with it, and `_check_state` receives it built and checked."""
    from sklearn.base import BaseEstimator

    from okl import _persist

    class Wrapper(BaseEstimator):
        def __init__(self, estimator, alpha=0.1):
            self.estimator, self.alpha = estimator, alpha

        def _validate_params(self):
            if not 0 < self.alpha < 1:
                raise ValueError("alpha")

        def partial_fit(self, X, y):
            self.estimator_ = OnlineKernelRegressor().partial_fit(X, y)
            self.n_features_in_, self.t_, self.width_ = X.shape[1], len(X), 0.5
            return self

        def _check_state(self, check):
            inner = check.attrs["estimator_"]
            assert isinstance(inner, OnlineKernelRegressor)
            check.out["estimator_"] = inner
            check.floats("width_", lo=0.0)
            return {}

    monkeypatch.setitem(_persist.ESTIMATORS, "Wrapper", Wrapper)
    X, y, _ = _data()
    est = Wrapper(OnlineKernelClassifier(budget=9), alpha=0.2).partial_fit(X, y)
    okl.save(est, tmp_path / "w.okl")
    again = okl.load(tmp_path / "w.okl")
    assert again.estimator.budget == 9 and again.alpha == 0.2 and again.width_ == 0.5
    np.testing.assert_array_equal(again.estimator_.predict(X), est.estimator_.predict(X))


def test_load_expected_refuses_a_file_of_another_kind(tmp_path):
    X, y, _ = _data()
    okl.save(OnlineKernelRegressor().fit(X, y), tmp_path / "m.okl")
    with pytest.raises(okl.ModelFileError, match="holds a model of class "
                                                 "OnlineKernelRegressor, not OnlineKernelClassifier"):
        okl.load(tmp_path / "m.okl", expected=OnlineKernelClassifier)
    assert isinstance(okl.load(tmp_path / "m.okl", expected=(OnlineKernelClassifier,
                                                             OnlineKernelRegressor)),
                      OnlineKernelRegressor)
    with pytest.raises(TypeError, match="expected must be"):
        okl.load(tmp_path / "m.okl", expected="regressor")


@pytest.mark.parametrize("approximation", [None, "fourier", "nystroem"])
def test_a_krls_saved_during_its_warm_up_goes_on_learning(approximation):
    """Found by bench/adversarial.py: a loaded KernelRLSRegressor took its noise='auto' warm-up
    for a Fourier one and refused partial_fit ("cannot change approximation=None")."""
    rng = np.random.default_rng(0)
    est = okl.KernelRLSRegressor(approximation=approximation)
    for x in rng.normal(size=(3, 4)):
        est.learn_one(x, 0.5)
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    again = okl.load(buffer)
    X = rng.normal(size=(2, 4))
    for model in (est, again):
        model.partial_fit(X, np.sin(X[:, 0]))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
