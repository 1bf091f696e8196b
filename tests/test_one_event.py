"""One event at a time: the compiled step equals partial_fit on the same rows; fails atomically."""
import pickle

import numpy as np
import pytest

from okl import (ConformalRegressor, KernelRLSRegressor, MultiKernelRegressor,
                 OnlineKernelClassifier, OnlineKernelRegressor)
from okl.losses import MARGIN_LOSSES
from okl.pipeline import EventAdapter
from okl.regression import REGRESSION_LOSSES

KERNELS = {
    "gaussian": dict(gamma=0.5),
    "laplacian": dict(gamma=0.5),
    "linear": dict(kernel="linear", coef0=1.0),
    "polynomial": dict(kernel="polynomial", gamma=0.2, degree=3, coef0=1.0),
}


def stream(n=150, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.2 * rng.normal(size=n)
    return X, y


def assert_same(a, b):
    sa, sb = a._expansion.get_state(), b._expansion.get_state()
    for key in sa:
        np.testing.assert_allclose(np.asarray(sa[key], float), np.asarray(sb[key], float),
                                   rtol=0, atol=1e-12, err_msg=key)
    for name in ("t_", "ck2_", "eta_", "lam_", "n_support_"):
        assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-12, abs=1e-12), name


def one_event_run(make, X, y, warm=1):
    est = make()
    adapter = EventAdapter(est)
    preds = []
    for i, (xi, yi) in enumerate(zip(X, y)):
        preds.append(adapter.predict_one(xi) if i else None)
        adapter.learn_one(xi, yi)
    return est, preds


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("loss", REGRESSION_LOSSES)
def test_regressor_events_equal_partial_fit(kernel, loss):
    X, y = stream()
    params = dict(KERNELS[kernel], loss=loss, epsilon=0.1, quantile=0.3)
    ours, preds = one_event_run(lambda: OnlineKernelRegressor(**params), X, y)
    assert ours._compiled_events([None]) is not None
    ref = OnlineKernelRegressor(**params)
    ref_preds = []
    for i in range(len(X)):
        if i:
            ref_preds.append(ref.predict(X[i:i + 1])[0])
        ref.partial_fit(X[i:i + 1], y[i:i + 1])
    assert_same(ours, ref)
    np.testing.assert_allclose(preds[1:], ref_preds, rtol=0, atol=1e-12)
    assert_same(ours, OnlineKernelRegressor(**params).partial_fit(X, y))


@pytest.mark.parametrize("schedule", [
    dict(eta=0.3, eta_decay=0.5), dict(eta=lambda t: 0.5 / np.sqrt(t)),
    dict(lam=0.1, lam_decay=0.2), dict(budget=20), dict(budget=20, budget_policy="smallest"),
    dict(lam=0.0)])
def test_schedules_and_budgets_are_the_chunk_ones(schedule):
    X, y = stream(300)
    ours, _ = one_event_run(lambda: OnlineKernelRegressor(gamma=0.5, **schedule), X, y)
    assert_same(ours, OnlineKernelRegressor(gamma=0.5, **schedule).partial_fit(X, y))


@pytest.mark.parametrize("loss", [loss for loss in MARGIN_LOSSES if loss != "exponential"])
def test_classifier_events_equal_partial_fit(loss):
    X, y = stream()
    labels = np.where(y > 0.4, "b", "a")
    ours, preds = one_event_run(lambda: OnlineKernelClassifier(gamma=0.5, loss=loss), X, labels)
    ref = OnlineKernelClassifier(gamma=0.5, loss=loss).partial_fit(X, labels)   # labels added
    assert_same(ours, ref)
    assert set(p for p in preds if p is not None) <= {"a", "b"}


def test_row_layouts_give_the_same_iterates():
    X, y = stream()
    X = X.astype(np.float32).astype(np.float64)
    F = np.asfortranarray(X)
    est = OnlineKernelRegressor(gamma=0.5)
    adapter = EventAdapter(est)
    for i in range(len(X)):
        row = (X[i], X[i].tolist(), X[i].astype(np.float32), F[i], F[i:i + 1],
               {"a": X[i, 0], "b": X[i, 1], "c": X[i, 2]})[i % 6 if i else 5]
        adapter.learn_one(row, float(y[i]) if i % 2 else np.float64(y[i]))
    assert_same(est, OnlineKernelRegressor(gamma=0.5).partial_fit(X, y))


CACHES = ("_expansion", "_one_event_state", "_feature_index", "_feature_keys")


def state(est):
    return ({k: v for k, v in vars(est).items() if k not in CACHES},
            est._expansion.get_state())


def assert_unchanged(before, est):
    after = state(est)
    assert before[0].keys() == after[0].keys()
    for key in before[0]:
        np.testing.assert_array_equal(before[0][key], after[0][key], err_msg=key)
    for key in before[1]:
        np.testing.assert_array_equal(before[1][key], after[1][key], err_msg=key)


@pytest.mark.parametrize("x, y, error", [
    (np.array([np.nan, 0.0, 0.0]), 1.0, ValueError),
    (np.array([np.inf, 0.0, 0.0]), 1.0, ValueError),
    (np.array([0.0, 0.0]), 1.0, ValueError),
    ([0.0, "a", 0.0], 1.0, TypeError),
    (np.zeros(3), float("nan"), ValueError),
    (np.zeros(3), "a", TypeError),
])
def test_bad_events_leave_the_regressor_as_it_was(x, y, error):
    X, Y = stream(30)
    est = OnlineKernelRegressor(gamma=0.5, kernel="laplacian").partial_fit(X, Y)
    adapter = EventAdapter(est)
    adapter.schema.commit(X[0], None)
    before = state(est)
    with pytest.raises(error):
        adapter.learn_one(x, y)
    assert_unchanged(before, est)


def test_a_huge_finite_row_is_learned_as_partial_fit_learns_it():
    X, y = stream(30)
    huge = np.array([[1e300, 1e300, 0.0]])                # ||x||^2 overflows, x is finite
    ours = OnlineKernelRegressor(kernel="laplacian").partial_fit(X, y)
    EventAdapter(ours).learn_one(huge[0], 1.0)
    ref = OnlineKernelRegressor(kernel="laplacian").partial_fit(X, y).partial_fit(huge, [1.0])
    assert_same(ours, ref)


def test_divergence_and_unseen_labels_leave_the_model_as_it_was():
    X, y = stream(30)
    est = OnlineKernelRegressor(kernel="linear", coef0=1.0, eta=1e200, eta_decay=0.0, gamma=1.0)
    est.partial_fit(X[:1], y[:1])
    before = state(est)
    with pytest.raises(FloatingPointError, match="diverged at step t=2"):
        est._learn_event(est._compiled_events([None]), X[1] * 1e120, 1e200)
    assert_unchanged(before, est)
    clf = OnlineKernelClassifier().partial_fit(X, y > 0.4, classes=[False, True])
    adapter = EventAdapter(clf)
    adapter.schema.commit(X[0], None)
    before = state(clf)
    with pytest.raises(ValueError, match="one kind of label"):
        adapter.learn_one(X[0], "maybe")
    with pytest.raises(ValueError, match="not in classes_"):
        adapter.learn_one(X[0], 2)
    assert_unchanged(before, clf)


def test_a_kept_prediction_is_reused_only_on_the_same_row_and_model():
    X, y = stream(60)
    ours = OnlineKernelRegressor(gamma=0.5).partial_fit(X[:20], y[:20])
    ref = OnlineKernelRegressor(gamma=0.5).partial_fit(X[:20], y[:20])
    adapter = EventAdapter(ours)
    adapter.predict_one(X[20])
    ours.partial_fit(X[20:30], y[20:30])          # the model moved on: the kept f is stale
    ref.partial_fit(X[20:30], y[20:30])
    adapter.learn_one(X[20], y[20])
    ref.partial_fit(X[20:21], y[20:21])
    row = X[31].copy()
    adapter.predict_one(row)
    row[0] += 1e-3                                # the same array, another row
    adapter.learn_one(row, y[31])
    ref.partial_fit(row[None], y[31:32])
    assert_same(ours, ref)
    assert adapter.predict_one(X[40]) == pytest.approx(ref.predict(X[40:41])[0], abs=1e-12)


def test_dict_events_take_the_names_of_a_dataframe_fit():
    pd = pytest.importorskip("pandas", reason="pandas names the features of a DataFrame")
    X, y = stream(40)
    frame = pd.DataFrame(X, columns=["u", "v", "w"])
    ours = OnlineKernelRegressor(gamma=0.5).partial_fit(frame[:30], y[:30])
    adapter = EventAdapter(ours)
    for i in range(30, 40):
        adapter.learn_one({"w": X[i, 2], "v": X[i, 1], "u": X[i, 0]}, y[i])
    ref = OnlineKernelRegressor(gamma=0.5).partial_fit(X, y)
    assert_same(ours, ref)
    with pytest.raises(ValueError, match="'z'"):
        adapter.learn_one({"z": 1.0}, 0.0)
    arrays = EventAdapter(OnlineKernelRegressor().partial_fit(X, y))
    with pytest.raises(ValueError, match="without feature names"):
        arrays.learn_one({"u": 1.0}, 0.0)


def test_probabilities_of_one_event_are_predict_proba():
    X, y = stream(80)
    labels = np.where(y > 0.4, 1, 0)
    clf = OnlineKernelClassifier(gamma=0.5, loss="logistic").partial_fit(X, labels, classes=[0, 1])
    adapter = EventAdapter(clf)
    for i in range(5):
        p = adapter.predict_proba_one(X[i])
        np.testing.assert_allclose([p[0], p[1]], clf.predict_proba(X[i:i + 1])[0], rtol=0,
                                   atol=1e-12)
        assert adapter.predict_one(X[i]) == clf.predict(X[i:i + 1])[0]
        assert adapter.decision_function_one(X[i]) == pytest.approx(
            clf.decision_function(X[i:i + 1])[0], abs=1e-12)


# -- the estimator's own methods (OneEventMixin) -----------------------------------------------

StreamingRegressor = OnlineKernelRegressor
StreamingClassifier = OnlineKernelClassifier


def test_mixin_learns_dicts_from_the_first_event_like_partial_fit():
    X, y = stream(80)
    est = StreamingRegressor(gamma=0.5)
    assert est.predict_one({"a": 1.0, "b": 2.0, "c": 3.0}) == 0.0
    for row, target in zip(X, y):
        est.predict_one({"c": row[2], "a": row[0], "b": row[1]})
        est.learn_one({"a": row[0], "b": row[1], "c": row[2]}, target)
    assert list(est._row_keys) == ["a", "b", "c"]
    assert_same(est, OnlineKernelRegressor(gamma=0.5).partial_fit(X, y))


def test_mixin_classifier_defers_and_gives_probabilities():
    X, y = stream(80)
    labels = np.where(y > 0.4, "b", "a")
    k = int(np.argmax(labels != labels[0]))
    est = StreamingClassifier(gamma=0.5, loss="logistic")
    assert est.predict_one(X[0]) is None and est.predict_proba_one(X[0]) == {}
    for i, (row, label) in enumerate(zip(X, labels)):
        if 0 < i <= k:
            assert est.predict_one(row) == labels[0]
        est.learn_one(row, label)
    ref = OnlineKernelClassifier(gamma=0.5, loss="logistic").partial_fit(X, labels)
    assert_same(est, ref)
    p = est.predict_proba_one(X[0])
    assert p["b"] == pytest.approx(ref.predict_proba(X[:1])[0, 1], abs=1e-12)
    assert not hasattr(StreamingClassifier(), "predict_proba_one")


@pytest.mark.parametrize("event", [
    {"a": 1.5, "b": 2, "c": -3.0},                          # floats and ints, in order
    {"c": -3.0, "a": 1.5, "b": 2},                          # another order
    {"a": np.float32(1.5), "b": np.int64(2), "c": -3.0},    # NumPy numbers
    {"a": 1.5, "b": True + 1, "c": -3.0},
])
def test_dict_events_of_any_form_give_the_same_row(event):
    est = StreamingRegressor()
    est.learn_one({"a": 0.0, "b": 0.0, "c": 0.0}, 0.0)
    from okl._rows import check_row
    row, names = check_row(est, event)
    np.testing.assert_array_equal(row, [1.5, 2.0, -3.0])
    assert names is None and row.dtype == np.float64
    with pytest.raises(ValueError, match="non-finite"):
        check_row(est, {"a": 1.5, "b": float("inf"), "c": -3.0})
    with pytest.raises(TypeError, match="'b'"):
        check_row(est, {"a": 1.5, "b": "2", "c": -3.0})


def test_one_row_partial_fit_of_any_layout_is_the_chunk_step():
    X, y = stream(120)
    X = X.astype(np.float32).astype(np.float64)            # exact in float32 too
    ref = OnlineKernelRegressor(gamma=0.5).fit(X, y)
    F = np.asfortranarray(X)
    est = OnlineKernelRegressor(gamma=0.5).fit(X[:1], y[:1])
    for i in range(1, len(X)):
        row = (X[i:i + 1], X[i:i + 1].tolist(), F[i:i + 1], X[i:i + 1].astype(np.float32))[i % 4]
        est.partial_fit(row, y[i:i + 1] if i % 2 else [y[i]])
    assert_same(est, ref)
    np.testing.assert_array_equal(est.predict(X[:1]), ref.predict(X[:1]))
    before = state(est)
    for bad_X, bad_y, error in ((np.array([[np.nan, 0.0, 0.0]]), [1.0], ValueError),
                                (np.array([[0.0, 0.0, 0.0]]), [np.inf], ValueError),
                                (np.array([[0.0, 0.0]]), [1.0], ValueError)):
        with pytest.raises(error):
            est.partial_fit(bad_X, bad_y)
    assert_unchanged(before, est)
    clf = OnlineKernelClassifier().fit(X, y > 0.4)
    before = state(clf)
    with pytest.raises(ValueError, match="one kind of label"):
        clf.partial_fit(X[:1], np.array(["maybe"]))
    assert_unchanged(before, clf)


def test_pickle_after_events_and_clone():
    import pickle

    from sklearn.base import clone
    X, y = stream(40)
    est = OnlineKernelRegressor(gamma=0.5)
    for xi, yi in zip(X[:30], y[:30]):
        est.predict_one(xi)
        est.learn_one(xi, yi)
    again = pickle.loads(pickle.dumps(est))
    for xi, yi in zip(X[30:], y[30:]):
        est.learn_one(xi, yi)
        again.learn_one(xi, yi)
    assert_same(again, est)
    assert not hasattr(clone(est), "t_")


def test_any_float64_buffer_is_learned_as_a_ready_row():
    """Big-endian, misaligned and read-only rows take the compiled step's other road (a
    typed buffer, or the schema's conversion) and give the iterates of the ready rows."""
    X, y = stream(90)
    big = X.astype(">f8")
    odd = np.frombuffer(b"\0" + X.tobytes(), dtype=np.float64, offset=1).reshape(X.shape)
    frozen = X.copy()
    frozen.flags.writeable = False
    assert not odd.flags.aligned
    est, ref = OnlineKernelRegressor(gamma=0.5), OnlineKernelRegressor(gamma=0.5)
    for i in range(len(X)):
        row = (X[i], big[i], odd[i], frozen[i])[i % 4]
        if i:
            assert est.predict_one(row) == ref.predict(X[i:i + 1])[0]
        est.learn_one(row, float(y[i]))
        ref.partial_fit(X[i:i + 1], y[i:i + 1])
    assert_same(est, ref)
    events = est._one_event()._fast()
    f = events.predict(X[0], est.t_, est.intercept_)
    assert events.predict(odd[0], est.t_, est.intercept_) == f
    with pytest.raises(ValueError, match="Big-endian"):
        events.predict(big[0], est.t_, est.intercept_)
    with pytest.raises(ValueError, match="contiguous"):
        events.predict(np.asfortranarray(X)[0], est.t_, est.intercept_)
    with pytest.raises(ValueError, match="expecting 3 features"):
        events.predict(X[0, :2].copy(), est.t_, est.intercept_)


def test_label_codes_follow_the_classes_of_a_refit():
    """learn_one remembers the code of each label for the current classes_ only."""
    X, y = stream(120)
    labels = (y > np.median(y)).astype(int)
    est = OnlineKernelClassifier(gamma=0.5, classes=None)
    for xi, li in zip(X[:60], labels[:60]):
        est.predict_one(xi)
        est.learn_one(xi, int(li))
    est.fit(X[:60], labels[:60] + 1)                # classes_ [1, 2]: label 1 is now negative
    ref = OnlineKernelClassifier(gamma=0.5, classes=None).fit(X[:60], labels[:60] + 1)
    for xi, li in zip(X[60:], labels[60:] + 1):
        assert est.predict_one(xi) == ref.predict(xi[None, :])[0]
        est.learn_one(xi, int(li))
        ref.partial_fit(xi[None, :], [li])
    assert_same(est, ref)
    np.testing.assert_array_equal(est.classes_, [1, 2])


def test_the_one_event_lock_is_not_pickled_and_comes_back():
    import pickle
    X, y = stream(30)
    est = OnlineKernelRegressor(gamma=0.5)
    for xi, yi in zip(X, y):
        est.learn_one(xi, yi)
    adapter = est._one_event()
    assert "lock" in vars(adapter) and "lock" not in adapter.__getstate__()
    again = pickle.loads(pickle.dumps(est))
    assert "lock" not in vars(again._one_event())
    again.learn_one(X[0], y[0])
    assert again._one_event().lock is not adapter.lock


def _copies(model, tmp_path):
    import copy
    import pickle

    import okl

    path = tmp_path / "model.okl"
    okl.save(model, path)
    return {"deepcopy": copy.deepcopy(model), "pickle": pickle.loads(pickle.dumps(model)),
            "okl.load": okl.load(path)}


@pytest.mark.parametrize("make", [OnlineKernelRegressor, OnlineKernelClassifier])
def test_a_copy_predicts_on_the_compiled_step_at_once(make, tmp_path):
    """A copy of a validated learner is validated too: its first predict_one takes the
    compiled step (it used to take the Python path until its first learn_one), and
    predicts what the original does."""
    from okl._core._pointwise import Events

    X, y = stream()
    model = make().fit(X, y > 0 if make is OnlineKernelClassifier else y)
    for kind, copied in _copies(model, tmp_path).items():
        assert copied.predict_one(X[0]) == model.predict_one(X[0]), kind
        assert isinstance(getattr(copied, "_one_event_step", None), Events), kind


def test_a_copy_of_changed_parameters_is_validated_again(tmp_path):
    """set_params without a new fit: neither the learner nor its copies count as
    validated, so their next call validates (and takes) the new value."""
    import copy
    import pickle

    from okl import _locks

    X, y = stream()
    model = OnlineKernelRegressor().fit(X, y)
    assert _locks.validated(model)
    model.set_params(eta=0.5)
    for copied in (model, copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert not _locks.validated(copied)
        copied.partial_fit(X[:5], y[:5])
        assert _locks.validated(copied) and copied.eta == 0.5


@pytest.mark.parametrize("make, classes", [
    (lambda: OnlineKernelClassifier(classes=[0, 1]), True),
    (lambda: OnlineKernelClassifier(), False),
    (lambda: OnlineKernelRegressor(), None),
])
def test_the_compiled_step_is_built_with_the_first_events(make, classes):
    """The event that first fits the model (the one-row partial_fit; without `classes`,
    the one that brings the second label) also builds its compiled step, which the next
    events take; the iterates stay those of partial_fit."""
    X, y = stream(n=40)
    if classes is not None:
        y = (y > np.median(y)).astype(int)
    est, whole = make(), make()
    first = 1 if classes is not False else int(np.argmax(y != y[0])) + 1
    for i in range(first):
        est.learn_one(X[i], y[i])
    step = est._one_event_step
    assert step is not None and step.matches(est)
    for i in range(first, len(X)):
        est.predict_one(X[i])
        est.learn_one(X[i], y[i])
    whole.partial_fit(X, y, **({"classes": [0, 1]} if classes else {}))
    assert_same(est, whole)


FIRST_EVENT = {     # the learner, and the class whose _learn the interrupt is raised in
    "OnlineKernelRegressor": (OnlineKernelRegressor, OnlineKernelRegressor),
    "OnlineKernelClassifier": (lambda: OnlineKernelClassifier(classes=[0, 1]),
                               OnlineKernelClassifier),
    "KernelRLSRegressor": (KernelRLSRegressor, KernelRLSRegressor),
    "MultiKernelRegressor(learner='krls')": (
        lambda: MultiKernelRegressor(learner="krls", sleep=0.01), KernelRLSRegressor),
    "ConformalRegressor": (ConformalRegressor, KernelRLSRegressor),
}


@pytest.mark.parametrize("name", sorted(FIRST_EVENT))
@pytest.mark.parametrize("failure", ["target", "interrupt"])
def test_a_failed_first_event_leaves_the_learner_as_it_was(name, failure, monkeypatch):
    """The first learn_one builds the learner's event adapter: a call that raises (a bad
    target, a Ctrl-C inside the learning) adds none, so the learner pickles as before."""
    make, inner = FIRST_EVENT[name]
    est = make()
    before = pickle.dumps(est)
    x = {"a": 0.5, "b": -1.0}
    if failure == "target":
        with pytest.raises(ValueError):
            est.learn_one(x, float("nan"))
    else:
        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt
        monkeypatch.setattr(inner, "_learn", interrupted)
        with pytest.raises(KeyboardInterrupt):
            est.learn_one(x, 1)
        monkeypatch.undo()
    assert "_one_event_state" not in est.__dict__
    assert pickle.dumps(est) == before
    est.learn_one(x, 1)
    assert est.predict_one(x) is not None
