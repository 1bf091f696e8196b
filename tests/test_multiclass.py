"""Native multiclass (docs/multiclass.md): labels on a stream, the multi-output expansion, NORMA."""
import copy
import io

import numpy as np
import pytest
from scipy.special import expit, softmax
from sklearn.base import clone
from sklearn.datasets import load_digits

import okl
from okl import OnlineKernelClassifier
from okl._core._expansion import KernelExpansion
from okl.kernels import kernel_params
from okl._core._multiexpansion import MultiExpansion
from okl._core._multiexpansion import multi_merge_find as c_merge_find
from okl._engines import ENGINES
from okl._numpy.multiexpansion import multi_merge_find as np_merge_find
from okl._numpy.multiexpansion import phi
from okl._numpy.pointwise import make_schedule, make_state
from okl._params import InvalidParameterError
from okl.preprocessing import OnlineStandardScaler

POLICIES = {"oldest": 0, "smallest": 1, "merge": 2}


def blobs(n=400, d=4, k=4, seed=0, late=None):
    """k Gaussian blobs in d dimensions, labels 10, 20, ...; `late`: the first row of class 3."""
    rng = np.random.default_rng(seed)
    means = 2.0 * rng.normal(size=(k, d))
    y = rng.integers(0, k, n)
    if late is not None:
        y[:late] = np.where(y[:late] == k - 1, 0, y[:late])
    X = means[y] + rng.normal(size=(n, d))
    return X, 10 * (y + 1)


def state(est):
    return ({key: v for key, v in vars(est).items()
             if key not in ("_one_event_state", "_feature_index", "_feature_keys")},
            est._expansion.get_state())


def assert_unchanged(before, est):
    after = state(est)
    assert before[0].keys() == after[0].keys()
    for key in before[0]:
        np.testing.assert_array_equal(before[0][key], after[0][key], err_msg=key)
    for key in before[1]:
        np.testing.assert_array_equal(before[1][key], after[1][key], err_msg=key)


# -- the engines --------------------------------------------------------------------------

@pytest.mark.parametrize("loss", [0, 1])
@pytest.mark.parametrize("budget, policy", [(0, "oldest"), (25, "oldest"), (25, "smallest"),
                                            (25, "merge")])
def test_engine_twins_on_a_long_stream(loss, budget, policy):
    rng = np.random.default_rng(3)
    n, d, k = 1500, 5, 4
    X = rng.normal(size=(n, d))
    y = rng.integers(0, k, n).astype(np.intp)
    weight = rng.uniform(0, 2, n) * (rng.uniform(size=n) > 0.1)
    out = {}
    for name, engine in ENGINES.items():
        model = engine.multi_expansion(d, k, kernel_params(2, gamma=0.3), budget, POLICIES[policy])
        st = make_state()
        del st["b"]
        b, scores = np.zeros(k), np.empty((n, k))
        failed, st = engine.multiclass(model, X, y, make_schedule(0, 0.0, 0.5, 1e-3, 0.0, 1.0,
                                                                  True),
                                       loss, st, b, scores, weight)
        assert failed == -1
        out[name] = (scores, model.coef_, model.centers_, b, st["t"], model.n_merges)
    c, p = out["cython"], out["numpy"]
    for a, b_ in zip(c[:4], p[:4]):
        np.testing.assert_allclose(a, b_, rtol=0, atol=1e-10)
    assert c[4] == p[4] and c[5] == p[5]
    if budget:
        assert len(c[1]) <= budget
    if policy == "merge":
        assert c[5] > 0


def test_vector_merge_matches_its_twin_and_a_brute_force_search():
    rng = np.random.default_rng(1)
    for _ in range(300):
        n, d, k = 10, 3, 4
        centers = rng.normal(size=(n, d))
        coef = rng.normal(size=(n, k)) * rng.uniform(0.05, 1, (n, 1))
        m, partner, h, az, loss = c_merge_find(centers, coef, 0.4)
        twin = np_merge_find(centers, coef, 0.4)
        assert (m, partner) == twin[:2]
        np.testing.assert_allclose([h, loss], twin[2:3] + twin[4:], rtol=0, atol=1e-12)
        np.testing.assert_allclose(az, twin[3], rtol=0, atol=1e-12)
        A = coef[m] @ coef[m]
        assert m == np.argmin(np.einsum("ij,ij->i", coef, coef))
        assert 0.0 <= loss <= A + 1e-12
        if partner >= 0:         # h is the best point of the segment, a_z the projection
            B, C = coef[partner] @ coef[partner], coef[m] @ coef[partner]
            g = 0.4 * np.sum((centers[m] - centers[partner]) ** 2)
            grid = max(phi(A, B, C, g, t) for t in np.linspace(0, 1, 2001))
            assert phi(A, B, C, g, h) >= grid - 1e-12
            np.testing.assert_allclose(loss, A + B + 2 * C * np.exp(-g) - phi(A, B, C, g, h),
                                       atol=1e-12)


# -- labels -------------------------------------------------------------------------------

def test_two_classes_keep_the_binary_model_and_iterates():
    X, y = blobs(k=2)
    clf = OnlineKernelClassifier(gamma=0.5).fit(X, y)
    assert type(clf._expansion) is KernelExpansion and clf.decision_function(X).ndim == 1
    signs = OnlineKernelClassifier(gamma=0.5).fit(X, np.where(y == 20, 1, -1))
    np.testing.assert_array_equal(clf.decision_function(X), signs.decision_function(X))
    assert clf.__sklearn_tags__().classifier_tags.multi_class


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_the_third_class_converts_the_binary_model_exactly(loss):
    X, y = blobs(k=3, late=200)
    clf = OnlineKernelClassifier(gamma=0.5, loss=loss, budget=40).partial_fit(X[:200], y[:200])
    assert clf.classes_.tolist() == [10, 20] and type(clf._expansion) is KernelExpansion
    f = clf.decision_function(X)
    grown = copy.deepcopy(clf)
    grown._insert_class(30)
    s = grown.decision_function(X)
    assert s.shape == (len(X), 3) and type(grown._expansion) is MultiExpansion
    np.testing.assert_allclose(s[:, 0], -f / 2, atol=1e-12)
    np.testing.assert_allclose(s[:, 1], f / 2, atol=1e-12)
    np.testing.assert_array_equal(s[:, 2], 0.0)
    np.testing.assert_array_equal(grown.predict(X), clf.predict(X))
    np.testing.assert_allclose(softmax(s[:, :2], axis=1)[:, 1], expit(f), atol=1e-12)
    np.testing.assert_allclose(grown.intercept_[:2], [-clf.intercept_ / 2, clf.intercept_ / 2])


def test_a_late_label_in_events_equals_partial_fit_and_every_class_has_a_probability():
    X, y = blobs(n=300, k=4, late=150)
    make = lambda: OnlineKernelClassifier(gamma=0.5, loss="logistic", budget=60)  # noqa: E731
    ours = make()
    seen = []
    for xi, yi in zip(X, y):
        p = ours.predict_proba_one(xi)
        assert set(p) == set(seen) and (not p or abs(sum(p.values()) - 1) < 1e-12)
        ours.learn_one(xi, int(yi))
        seen = sorted(set(seen) | {int(yi)})
    ref = make().partial_fit(X, y)
    assert ours.classes_.tolist() == ref.classes_.tolist() == [10, 20, 30, 40]
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-12)
    chunks = make()
    for lo in range(0, 300, 70):
        chunks.partial_fit(X[lo:lo + 70], y[lo:lo + 70])
    np.testing.assert_allclose(chunks.decision_function(X), ref.decision_function(X), atol=1e-12)
    assert ours.predict_one(X[0]) in (10, 20, 30, 40)


def test_progressive_scores_give_unknown_classes_no_chance():
    X, y = blobs(n=200, k=3, late=100)
    clf = OnlineKernelClassifier(gamma=0.5)
    scores = clf._progressive_scores(X, y)
    first = int(np.argmax(y == 30))
    assert scores.shape == (200, 3)
    assert np.all(scores[:first + 1, 2] == -np.inf) and np.all(np.isfinite(scores[first + 1:]))
    assert clf._predictions(scores[:first + 1]).tolist() != [30] * (first + 1)


def test_one_class_learns_nothing_and_predicts_it():
    X, y = blobs(n=50, k=2)
    clf = OnlineKernelClassifier().partial_fit(X[:5], np.full(5, "b"))
    assert clf.classes_.tolist() == ["b"] and clf.t_ == 0 and clf.predict_one(X[0]) == "b"
    assert clf.predict(X[:2]).tolist() == ["b", "b"]
    clf.learn_one(X[5], "a")
    assert clf.classes_.tolist() == ["a", "b"] and clf.t_ == 1


def test_fixed_classes_refuse_a_new_label_and_fit_takes_every_label():
    X, y = blobs(k=4)
    clf = OnlineKernelClassifier(classes=[10, 20, 30, 40, 50]).partial_fit(X[:50], y[:50])
    assert clf.classes_.tolist() == [10, 20, 30, 40, 50] and clf.fixed_classes_
    assert clf.decision_function(X[:3]).shape == (3, 5)
    before = state(clf)
    with pytest.raises(ValueError, match="not in classes_"):
        clf.partial_fit(X[:5], np.array([10, 20, 60, 10, 10]))
    with pytest.raises(ValueError, match="not in classes_"):
        clf.learn_one(X[0], 70)
    assert_unchanged(before, clf)
    fitted = OnlineKernelClassifier().fit(X, y)
    assert fitted.classes_.tolist() == [10, 20, 30, 40] and not fitted.fixed_classes_


@pytest.mark.parametrize("bad, match", [
    (np.array([10.0, np.nan]), "NaN"),
    (np.array([10, [1, 2]], dtype=object), "cannot be a class label"),
    (np.array(["a", "b"]), "one kind of label"),
    (np.array([10, None], dtype=object), "cannot be a class label"),
])
def test_bad_labels_raise_and_leave_the_model_as_it_was(bad, match):
    X, y = blobs(k=3)
    clf = OnlineKernelClassifier(budget=30).partial_fit(X[:100], y[:100])
    before = state(clf)
    with pytest.raises(ValueError, match=match):
        clf.partial_fit(X[:2], bad)
    with pytest.raises(ValueError):
        clf.learn_one(X[0], bad[1])
    assert_unchanged(before, clf)


def test_duplicate_classes_are_refused():
    X, y = blobs(k=3)
    with pytest.raises(InvalidParameterError, match="distinct"):
        OnlineKernelClassifier(classes=[10, 20, 20]).fit(X, y)
    with pytest.raises(ValueError, match="repeats a label"):
        OnlineKernelClassifier().partial_fit(X, y, classes=[10, 20, 20, 30])


def test_losses_without_a_multiclass_form_refuse_the_third_class():
    X, y = blobs(k=3, late=100)
    clf = OnlineKernelClassifier(loss="squared_hinge").partial_fit(X[:100], y[:100])
    before = state(clf)
    with pytest.raises(ValueError, match="multiclass losses"):
        clf.partial_fit(X[100:], y[100:])
    assert_unchanged(before, clf)


# -- the estimator ----------------------------------------------------------------------------

@pytest.mark.parametrize("params", [dict(loss="hinge"), dict(loss="logistic", budget=30),
                                    dict(budget=30, budget_policy="merge", eta=0.5),
                                    dict(budget=30, budget_policy="smallest", fit_intercept=False)])
def test_estimator_engines_agree(params):
    X, y = blobs(n=500, k=4, late=250)
    fast = OnlineKernelClassifier(gamma=0.5, **params).partial_fit(X, y)
    slow = OnlineKernelClassifier(gamma=0.5, engine="numpy", **params).partial_fit(X, y)
    np.testing.assert_allclose(fast.decision_function(X), slow.decision_function(X), atol=1e-10)
    assert fast.n_support_ == slow.n_support_ and fast.t_ == slow.t_
    if "budget" in params:
        assert fast.n_support_ <= 30
    slow.set_params(engine="cython")            # the model converts
    slow.partial_fit(X[:20], y[:20])
    fast.partial_fit(X[:20], y[:20])
    np.testing.assert_allclose(fast.decision_function(X), slow.decision_function(X), atol=1e-10)


def test_predict_proba_and_the_stream_loss():
    X, y = blobs(k=4)
    clf = OnlineKernelClassifier(gamma=0.5, loss="logistic").fit(X, y)
    p = clf.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.log(p), clf.predict_log_proba(X), atol=1e-12)
    np.testing.assert_array_equal(clf.classes_[p.argmax(axis=1)], clf.predict(X))
    s = clf.decision_function(X)
    idx = np.searchsorted(clf.classes_, y)
    np.testing.assert_allclose(clf._stream_loss(s, y), -np.log(p[np.arange(len(y)), idx]),
                               atol=1e-10)
    hinge = OnlineKernelClassifier(gamma=0.5).fit(X, y)
    assert not hasattr(hinge, "predict_proba")
    s = hinge.decision_function(X)
    other = s.copy()
    other[np.arange(len(y)), idx] = -np.inf
    np.testing.assert_allclose(hinge._stream_loss(s, y),
                               np.maximum(0, 1 - s[np.arange(len(y)), idx] + other.max(axis=1)))


def test_divergence_leaves_the_model_as_it_was():
    X, y = blobs(k=3)
    clf = OnlineKernelClassifier(kernel="linear", eta=1.0, eta_decay=0.0, loss="logistic")
    clf.fit(X[:50], y[:50])
    before = state(clf)
    with pytest.raises(FloatingPointError, match="diverged"):
        clf.partial_fit(X[:5] * 1e200, y[:5])
    assert_unchanged(before, clf)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_persistence_round_trip(engine):
    X, y = blobs(k=4)
    clf = OnlineKernelClassifier(gamma=0.5, loss="logistic", budget=30, engine=engine)
    clf.partial_fit(X[:300], y[:300])
    buffer = io.BytesIO()
    okl.save(clf, buffer)
    buffer.seek(0)
    back = okl.load(buffer)
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    back.partial_fit(X[300:], y[300:])
    clf.partial_fit(X[300:], y[300:])
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(back.classes_, clf.classes_)


def test_a_tampered_multiclass_file_is_refused():
    from okl._persist import ModelFileError, _read
    X, y = blobs(k=4)
    clf = OnlineKernelClassifier(gamma=0.5).fit(X, y)
    buffer = io.BytesIO()
    okl.save(clf, buffer)
    header, arrays = _read(io.BytesIO(buffer.getvalue()), "x")
    import json
    for edit in ({"attr:intercept_": np.zeros(3)}, {"obj:_expansion:coef": np.zeros((3, 2))}):
        bad = dict(arrays, **edit)
        out = io.BytesIO()
        np.savez(out, __header__=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                 **bad)
        out.seek(0)
        with pytest.raises(ModelFileError):
            okl.load(out)


def test_pickle_and_clone():
    import pickle
    X, y = blobs(k=3)
    clf = OnlineKernelClassifier(budget=20, budget_policy="merge").fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    assert not hasattr(clone(clf), "classes_")


def test_digits_progressive_accuracy():
    """digits, 10 classes, shuffled once, scaled online, one progressive pass, budget 200."""
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    scaler = OnlineStandardScaler()
    Z = np.empty_like(X)
    for i, x in enumerate(X):               # scaled with what the stream showed so far
        scaler.learn_one(x)
        Z[i] = scaler.transform_one(x)
    clf = OnlineKernelClassifier(budget=200, **DIGITS)
    predictions = clf._predictions(clf._progressive_scores(Z, y))
    assert np.mean(predictions == y) >= 0.93


# tuned on the first 20% of the stream only (bench/bench_multiclass.py --tune)
DIGITS = dict(loss="logistic", gamma=0.04, lam=1e-4, eta_decay=0.0, fit_intercept=False)


def test_the_command_line_learns_a_multiclass_file(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    from okl.__main__ import main
    X, y = blobs(n=300, k=4, late=100)
    path = tmp_path / "blobs.svm"
    dump_svmlight_file(X, y, str(path))
    model_file = tmp_path / "m.okl"
    assert main(["learn", str(path), "--model", "classifier", "--param", "gamma=0.5",
                 "-f", str(model_file)]) == 0
    out = capsys.readouterr().out
    assert "macro_f1" in out and "confusion" in out
    model = okl.load(model_file)
    assert model.classes_.tolist() == [10, 20, 30, 40] and model.decision_function(X).shape == (
        300, 4)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_to_river_is_a_multiclass_river_classifier(loss):
    river = pytest.importorskip("river")
    from river import metrics

    from okl.river import to_river
    X, y = blobs(n=400, k=4, late=200)
    model = to_river(OnlineKernelClassifier(gamma=0.5, loss=loss, budget=50))
    assert isinstance(model, river.base.Classifier)
    accuracy = metrics.Accuracy()
    seen = set()
    for xi, yi in zip(X, y.tolist()):
        x = dict(enumerate(xi))
        p = model.predict_proba_one(x)
        assert set(p) == seen and (not p or abs(sum(p.values()) - 1.0) < 1e-9)
        prediction = model.predict_one(x)
        if seen:
            accuracy.update(yi, prediction)
        model.learn_one(x, yi)
        seen.add(yi)
    assert model.estimator.classes_.tolist() == [10, 20, 30, 40]
    assert accuracy.get() > 0.6          # chance: 0.25


@pytest.mark.parametrize("approximation", ["fourier", "nystroem"])
def test_feature_models_take_the_third_class_and_undo_a_failed_call(approximation):
    X, y = blobs(k=3, late=100)
    clf = OnlineKernelClassifier(approximation=approximation, n_components=20, random_state=0)
    clf.partial_fit(X[:100], y[:100])
    before = state(clf)
    bad = X[100:].copy()
    bad[-1, 0] = np.nan                 # the third class arrives in a call that fails
    with pytest.raises(ValueError):
        clf.partial_fit(bad, y[100:])
    assert_unchanged(before, clf)
    clf.partial_fit(X[100:], y[100:])
    assert len(clf.classes_) == 3 and clf.decision_function(X).shape == (len(X), 3)


def test_a_pipeline_learns_a_multiclass_stream_with_progressive_validation():
    from okl.evaluation import progressive_validation
    from okl.pipeline import StreamPipeline
    X, y = blobs(n=300, k=4, late=150)
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelClassifier(gamma=0.5))])
    result = progressive_validation(pipe, ((x, t) for x, t in zip(X, y.tolist())),
                                    metrics=["accuracy", "macro_f1"])
    assert pipe.classes_.tolist() == [10, 20, 30, 40]
    assert result.predictions[0] is None      # no label known before the first event
    assert result.confusion.sum() == 299 and result.metrics["accuracy"][-1] > 0.6


def test_the_loss_codes_of_both_engines_agree():
    from okl._core import _multiclass
    from okl._numpy.codes import MulticlassLoss
    assert {e.name: int(e) for e in MulticlassLoss} == {
        e.name: int(e) for e in _multiclass.MulticlassLoss}


def test_a_loss_without_a_multiclass_form_cannot_continue_a_multiclass_model():
    X, y = blobs(k=3)
    clf = OnlineKernelClassifier(budget=20).fit(X[:100], y[:100])
    clf.set_params(loss="squared_hinge")
    before = state(clf)
    with pytest.raises(ValueError, match="no multiclass form"):
        clf.partial_fit(X[100:110], y[100:110])
    with pytest.raises(ValueError, match="no multiclass form"):
        clf.learn_one(X[0], y[0])
    assert_unchanged(before, clf)
    clf.set_params(loss="hinge").learn_one(X[0], y[0])
    assert clf.t_ == 101


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_multiclass_models_average(engine):
    from okl._averaging import average_models, divergence
    X, y = blobs(n=300, k=3)
    models = [OnlineKernelClassifier(gamma=0.5, engine=engine, classes=[10, 20, 30]).fit(
        X[lo:lo + 150], y[lo:lo + 150]) for lo in (0, 150)]
    mean = average_models(models)
    np.testing.assert_allclose(mean.decision_function(X),
                               sum(m.decision_function(X) for m in models) / 2, atol=1e-10)
    assert mean.t_ == 300 and mean.intercept_.shape == (3,)
    assert divergence(models[0], models[0]) == pytest.approx(0.0, abs=1e-9)
    assert divergence(models[0], models[1]) > 0


def test_a_model_saved_before_fixed_classes_existed_loads_and_learns():
    X, y = blobs(k=2)
    clf = OnlineKernelClassifier(gamma=0.5).fit(X[:100], y[:100])
    del clf.fixed_classes_                  # as okl 0.1 saved it
    buffer = io.BytesIO()
    okl.save(clf, buffer)
    buffer.seek(0)
    back = okl.load(buffer)
    back.partial_fit(X[100:], y[100:])
    clf.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
