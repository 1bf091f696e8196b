"""RegularizedPAClassifier one event at a time: the compiled step (`okl._core._pa.PAEvents`)
takes the iterates of partial_fit on the same rows, and fails leaving the model as it was."""
import copy
import warnings

import numpy as np
import pytest

import okl
from okl import RegularizedPAClassifier
from okl._core._pa import PAEvents
from okl.passive_aggressive import InfeasibleUpdateWarning

LINEAR_RULES = [dict(), dict(variant="PA-I", C=0.3), dict(variant="PA-II", C=0.3),
                dict(regularization="objective", alpha=0.05), dict(regularization="l2", beta=4.0),
                dict(regularization="l1", beta=6.0), dict(truncate_sigma=0.02),
                dict(update="mistake")]
KERNEL_RULES = [dict(), dict(variant="PA-I", C=0.3), dict(regularization="objective", alpha=0.05),
                dict(regularization="l2", beta=4.0)]
BUDGETS = [dict(), dict(budget=40, budget_policy="merge"), dict(budget=40, budget_policy="oldest"),
           dict(budget=40, budget_policy="smallest")]


def stream(n, k, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((k, d))
    y = np.argmax(X @ W.T + 0.7 * rng.standard_normal((n, k)), axis=1)
    return X, y


def model_state(est):
    state = est._model.get_state()
    return {key: np.asarray(value, dtype=float) if not isinstance(value, str) else value
            for key, value in state.items()}


def assert_same(a, b, atol=1e-12):
    """The same counters and labels; model states to atol, and to 1e-13 relative where they
    are large (a raw weight near 1e7 rounds by the BLAS kernels: OpenBLAS's pre-Haswell ones
    differ in the last bit, .ci/variants.py); atol=0: bit for bit."""
    rtol = 1e-13 if atol else 0.0
    for name in ("t_", "n_updates_", "n_infeasible_"):
        assert getattr(a, name) == getattr(b, name), name
    np.testing.assert_array_equal(a.classes_, b.classes_)
    sa, sb = model_state(a), model_state(b)
    assert sa.keys() == sb.keys()
    for key in sa:
        if isinstance(sa[key], str):
            assert sa[key] == sb[key], key
        else:
            np.testing.assert_allclose(sa[key], sb[key], rtol=rtol, atol=atol, err_msg=key)
    assert a.sq_norm_ == pytest.approx(b.sq_norm_, rel=1e-12, abs=1e-12)


def events_run(est, X, y, warm=3):
    """partial_fit on `warm` rows, then predict_one + learn_one on every other row."""
    est.partial_fit(X[:warm], y[:warm])
    preds, scores = [], []
    for x, label in zip(X[warm:], y[warm:].tolist()):
        preds.append(est.predict_one(x))
        scores.append(est.decision_function_one(x))
        est.learn_one(x, label)
    return est, preds, scores


def check_events_equal_partial_fit(params, k, n=2000):
    X, y = stream(n, k)
    classes = list(range(k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleUpdateWarning)
        ours, preds, scores = events_run(RegularizedPAClassifier(**params, classes=classes), X, y)
        assert type(ours._one_event()._fast()) is PAEvents       # the compiled path ran
        ref = RegularizedPAClassifier(**params, classes=classes)
        progressive = ref._progressive_scores(X, y, classes=classes, reset=True)
    assert_same(ours, ref)
    np.testing.assert_allclose(np.asarray(scores), progressive[3:], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(preds, ref._predictions(progressive[3:]))
    assert ours.n_updates_ > 50


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("rule", LINEAR_RULES, ids=str)
def test_linear_events_equal_partial_fit(rule, k):
    check_events_equal_partial_fit(rule, k)


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("budget", BUDGETS, ids=str)
@pytest.mark.parametrize("rule", KERNEL_RULES, ids=str)
def test_kernel_events_equal_partial_fit(rule, budget, k):
    n = 2000 if budget else 600          # unbudgeted: every update adds a centre
    check_events_equal_partial_fit(dict(rule, kernel="gaussian", gamma=0.1, **budget), k, n)


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("rule", [dict(variant="PA-I", C=0.5),
                                  dict(regularization="l2", beta=3.0)], ids=str)
def test_fourier_features_events_equal_partial_fit(rule, k):
    """approximation="fourier": the linear step on z(x), computed in the compiled step."""
    check_events_equal_partial_fit(dict(rule, kernel="gaussian", gamma=0.1,
                                        approximation="fourier", n_components=64,
                                        random_state=0), k, 1500)


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("kernel", [dict(kernel="gaussian", gamma=0.1),
                                    dict(kernel="polynomial", degree=2, coef0=1.0, gamma=0.1)],
                         ids=["gaussian", "polynomial"])
def test_nystroem_events_equal_partial_fit(kernel, k):
    """approximation="nystroem": the exact phase takes one-row partial_fit, then (after the
    switch) the compiled step on z(x), whose coefficients take K(x, x) as the chunk loop's."""
    check_events_equal_partial_fit(dict(kernel, variant="PA-I", C=0.5,
                                        approximation="nystroem", n_components=40), k, 1500)


@pytest.mark.parametrize("k", [2, 5])
def test_polynomial_kernel_events(k):
    check_events_equal_partial_fit(dict(kernel="polynomial", degree=2, coef0=1.0, gamma=0.1,
                                        budget=30, budget_policy="smallest"), k, 800)


@pytest.mark.parametrize("params", [dict(), dict(kernel="gaussian", gamma=0.1, budget=30)],
                         ids=["linear", "kernel"])
@pytest.mark.parametrize("k", [2, 4])
def test_row_types_give_the_same_iterates(params, k):
    X, y = stream(300, k, d=5)
    names = [f"f{j}" for j in range(5)]
    kinds = {
        "float64": list(X),
        "list": [row.tolist() for row in X],
        "float32": list(X.astype(np.float32).astype(np.float64).astype(np.float32)),
        "fortran": list(np.asfortranarray(X)),
        "dict": [dict(zip(names, row.tolist())) for row in X],
    }
    exact = X.astype(np.float32).astype(np.float64)
    runs = {}
    for kind, rows in kinds.items():
        est = RegularizedPAClassifier(**params, classes=list(range(k)))
        for row, label in zip(rows, y.tolist()):
            est.predict_one(row)
            est.learn_one(row, label)
        runs[kind] = est
    ref = RegularizedPAClassifier(**params, classes=list(range(k))).partial_fit(X, y)
    for kind in ("float64", "list", "fortran", "dict"):
        assert_same(runs[kind], ref)
    assert_same(runs["float32"], RegularizedPAClassifier(**params, classes=list(range(k)))
                .partial_fit(exact, y))


@pytest.mark.parametrize("params", [dict(), dict(regularization="l1", beta=5.0),
                                    dict(truncate_sigma=0.01),
                                    dict(kernel="gaussian", gamma=0.1, budget=20),
                                    dict(kernel="gaussian", gamma=0.1, budget=20,
                                         budget_policy="oldest"),
                                    dict(kernel="gaussian", gamma=0.1, approximation="fourier",
                                         n_components=32, random_state=0)],
                         ids=["linear", "l1", "truncate", "merge", "oldest", "fourier"])
@pytest.mark.parametrize("k", [2, 4])
def test_bad_row_leaves_the_model_as_it_was(params, k):
    X, y = stream(200, k, d=4)
    est = RegularizedPAClassifier(**params, classes=list(range(k))).partial_fit(X[:100], y[:100])
    for x, label in zip(X[100:150], y[100:150].tolist()):
        est.learn_one(x, label)
    before = copy.deepcopy(est)
    for bad in ([np.nan, 0, 0, 0], [np.inf, 1, 1, 1], [1, 2, 3]):
        row = np.asarray(bad, dtype=float)
        with pytest.raises(ValueError):
            est.learn_one(row, int(y[0]))
        with pytest.raises(ValueError):
            est.predict_one(row)
        assert_same(est, before, atol=0)
    for x, label in zip(X[150:], y[150:].tolist()):     # and it goes on as if nothing happened
        est.learn_one(x, label)
        before.learn_one(x, label)
    assert_same(est, before, atol=0)


@pytest.mark.parametrize("params", [dict(variant="PA"),
                                    dict(kernel="gaussian", gamma=0.1, budget=10)],
                         ids=["linear", "kernel"])
@pytest.mark.parametrize("k", [2, 3])
def test_overflowing_row_is_refused_whole(params, k):
    """||x||^2 overflows: the step diverges (FloatingPointError), in partial_fit as in
    learn_one, and nothing changes (a kernel model stored such a centre, then predicted NaN)."""
    X, y = stream(50, k, d=4)
    est = RegularizedPAClassifier(**params).fit(X, y)
    before = copy.deepcopy(est)
    big = np.array([1e308, 1e308, 0.0, 0.0])
    label = est.classes_[np.argmin(est.decision_function(big[None])[0])] if k > 2 else (
        0 if est.decision_function(big[None])[0] > 0 else 1)
    with pytest.raises(FloatingPointError):
        est.partial_fit(big[None], [label])
    assert_same(est, before, atol=0)
    with pytest.raises(FloatingPointError):
        est.learn_one(big, label)
    assert_same(est, before, atol=0)
    assert np.all(np.isfinite(est.decision_function(X)))


@pytest.mark.parametrize("k", [2, 3])
def test_divergent_step_raises_and_changes_nothing(k):
    """PA's step l / ||x||^2 overflows on a tiny row: FloatingPointError, as partial_fit."""
    X, y = stream(60, k, d=3)
    est = RegularizedPAClassifier(variant="PA", classes=list(range(k))).fit(X, y)
    ref = copy.deepcopy(est)
    before = copy.deepcopy(est)
    tiny = np.array([1e-300, 0.0, 0.0])
    label = int(np.argmin(est.decision_function(tiny[None])[0])) if k > 2 else (
        0 if est.decision_function(tiny[None])[0] > 0 else 1)
    with pytest.raises(FloatingPointError):
        ref.partial_fit(tiny[None], [label])
    with pytest.raises(FloatingPointError, match="left as it was"):
        est.learn_one(tiny, label)
    assert_same(est, before, atol=0)


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_interrupted_warning_leaves_the_model_as_it_was(monkeypatch, exc):
    """The infeasible-step warning is raised before any counter moves: an exception there
    (KeyboardInterrupt included) leaves the model as it was."""
    X, y = stream(100, 2, d=3)
    est = RegularizedPAClassifier(regularization="l2", beta=1.0).fit(X[:20] * 3, y[:20])
    assert est.n_infeasible_ == 0
    before = copy.deepcopy(est)

    def interrupt(*args, **kwargs):
        raise exc("interrupted")

    import okl.passive_aggressive as pa_module
    monkeypatch.setattr(pa_module.warnings, "warn", interrupt)
    small = np.array([0.1, 0.0, 0.0])       # beta ||x|| < 1: an empty constraint set
    with pytest.raises(exc):
        est.learn_one(small, 1)
    assert_same(est, before, atol=0)
    monkeypatch.undo()
    with pytest.warns(InfeasibleUpdateWarning):
        est.learn_one(small, 1)
    assert est.n_infeasible_ == 1 and est.t_ == before.t_ + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.learn_one(small, 1)             # once per fit
    assert est.n_infeasible_ == 2


def test_infeasible_events_count_as_partial_fit():
    X, y = stream(400, 2, d=3)
    X = X * np.where(np.arange(400) % 7 == 0, 0.05, 1.0)[:, None]
    params = dict(regularization="l2", beta=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleUpdateWarning)
        ours, _, _ = events_run(RegularizedPAClassifier(**params), X, y)
        ref = RegularizedPAClassifier(**params).partial_fit(X, y)
    assert ref.n_infeasible_ > 5
    assert_same(ours, ref)


@pytest.mark.parametrize("params", [dict(), dict(kernel="gaussian", gamma=0.1, budget=25)],
                         ids=["linear", "kernel"])
def test_chunks_and_events_interleaved_with_new_classes(params):
    """partial_fit chunks, learn_one events and labels discovered on the way: the iterates of
    one partial_fit (the compiled step is rebuilt whenever the model object changes)."""
    X, y = stream(900, 6, d=5, seed=3)
    labels = np.array(["a", "b", "c", "d", "e", "f"])[y]
    labels[:40] = np.where(y[:40] % 2, "b", "a")        # two classes first, the rest later
    ours = RegularizedPAClassifier(**params)
    i = 0
    for size in [5, 1, 50, 1, 1, 200, 3, 1]:
        ours.partial_fit(X[i:i + size], labels[i:i + size])
        i += size
        for x, label in zip(X[i:i + 60], labels[i:i + 60].tolist()):
            ours.learn_one(x, label)
        i += 60
    for x, label in zip(X[i:], labels[i:].tolist()):
        ours.learn_one(x, label)
    assert type(ours._one_event()._fast()) is PAEvents
    ref = RegularizedPAClassifier(**params).partial_fit(X, labels)
    assert_same(ours, ref)


@pytest.mark.parametrize("params", [dict(regularization="l2", beta=3.0),
                                    dict(kernel="gaussian", gamma=0.1, budget=25,
                                         regularization="l2", beta=3.0)],
                         ids=["linear", "kernel"])
@pytest.mark.parametrize("k", [2, 5])
def test_numpy_engine_takes_the_same_events(params, k):
    X, y = stream(500, k, d=4, seed=4)
    cy, _, _ = events_run(RegularizedPAClassifier(**params, classes=list(range(k))), X, y)
    npy, _, _ = events_run(RegularizedPAClassifier(**params, classes=list(range(k)),
                                                   engine="numpy"), X, y)
    assert npy._one_event()._fast() is None          # the one-row partial_fit path
    for name in ("t_", "n_updates_", "n_infeasible_"):
        assert getattr(cy, name) == getattr(npy, name), name
    np.testing.assert_allclose(cy.decision_function(X), npy.decision_function(X),
                               rtol=0, atol=1e-10)
    if "kernel" in params:
        np.testing.assert_allclose(cy.support_vectors_, npy.support_vectors_, rtol=0, atol=1e-10)
        np.testing.assert_allclose(cy.dual_coef_, npy.dual_coef_, rtol=0, atol=1e-10)
    else:
        np.testing.assert_allclose(cy.coef_, npy.coef_, rtol=0, atol=1e-10)
    assert cy.sq_norm_ == pytest.approx(npy.sq_norm_, rel=1e-10)


def test_set_params_and_reload_rebuild_the_step(tmp_path):
    X, y = stream(400, 3, d=4, seed=5)
    make = lambda: RegularizedPAClassifier(kernel="gaussian", gamma=0.1, budget=20,  # noqa: E731
                                           classes=[0, 1, 2])
    est, ref = make(), make()
    ref.partial_fit(X[:10], y[:10])
    ref.set_params(C=0.5, variant="PA-I")
    ref.partial_fit(X[10:], y[10:])
    for x, label in zip(X[:200], y[:200].tolist()):
        est.learn_one(x, label)
    okl.save(est, tmp_path / "pa.okl")
    est = okl.load(tmp_path / "pa.okl")
    for x, label in zip(X[200:], y[200:].tolist()):
        est.learn_one(x, label)
    assert est.t_ == 400
    assert not np.allclose(est.dual_coef_, ref.dual_coef_[:est.n_support_])   # C, variant differ
    again = make()
    for x, label in zip(X[:10], y[:10].tolist()):
        again.learn_one(x, label)
    again.set_params(C=0.5, variant="PA-I")
    for x, label in zip(X[10:], y[10:].tolist()):
        again.learn_one(x, label)
    assert_same(again, ref)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_untracked_norm_of_an_older_model_is_recomputed(engine):
    """A multiclass kernel model saved when sq_norm was NaN after an eviction (older okl):
    the next step, chunk or event, starts from the exact norm."""
    X, y = stream(300, 4, d=3, seed=6)
    params = dict(kernel="gaussian", gamma=0.3, budget=15, regularization="l2", beta=3.0,
                  classes=[0, 1, 2, 3], engine=engine)
    ref = RegularizedPAClassifier(**params).partial_fit(X, y)
    for split in ("chunk", "event"):
        est = RegularizedPAClassifier(**params).partial_fit(X[:200], y[:200])
        est._model.sq_norm = float("nan")
        if split == "chunk":
            est.partial_fit(X[200:], y[200:])
        else:
            for x, label in zip(X[200:], y[200:].tolist()):
                est.learn_one(x, label)
        assert est._model.sq_norm == pytest.approx(est._model.exact_sq_norm(), rel=1e-9)
        np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X),
                                   rtol=0, atol=1e-9)


@pytest.mark.parametrize("params", [dict(), dict(kernel="gaussian", gamma=0.1, budget=20)],
                         ids=["linear", "kernel"])
def test_threads_share_one_model(params, in_threads):
    """Threads calling learn_one / predict_one on one model: every event is learned once, the
    model stays finite (the estimator's lock serialises the compiled step)."""
    X, y = stream(2000, 5, d=6, seed=7)
    est = RegularizedPAClassifier(**params, classes=list(range(5))).partial_fit(X[:10], y[:10])

    def work(rows):
        for i in rows:
            est.predict_one(X[i])
            est.learn_one(X[i], int(y[i]))
            est.decision_function_one(X[(i * 7) % len(X)])
    assert not in_threads(work, [range(10 + j, 2000, 4) for j in range(4)])
    assert est.t_ == 2000
    assert np.all(np.isfinite(est.decision_function(X)))
    assert est._model.sq_norm == pytest.approx(
        est.rkhs_norm() ** 2 if "kernel" not in params else est._model.exact_sq_norm(), rel=1e-9)
