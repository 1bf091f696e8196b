"""The kernel PA's pair layout (at most two coefficients per centre): the same iterates as the
dense multi-output expansion on both engines, O(m) new classes, persistence in the dense
format, undo (docs/multiclass.md, section 1)."""
import pickle
import threading

import numpy as np
import pytest

import okl
from okl import RegularizedPAClassifier
from okl._core._multiexpansion import MultiExpansion, SparseMultiExpansion
from okl._core._pa import Event
from okl._numpy.multiexpansion import NumpyMultiExpansion, NumpySparseMultiExpansion, pair_layout
from okl._pa_models import KernelMultiPAModel, multi_expansion
from okl.budgets import budget_code
from okl.kernels import kernel_params
from okl.passive_aggressive import REGULARIZATIONS, VARIANTS

RULES = [("none", "PA"), ("none", "PA-I"), ("none", "PA-II"), ("objective", "PA"),
         ("l2", "PA")]
POLICIES = [(0, "oldest"), (25, "oldest"), (25, "smallest")]
CLASSES = {("cython", False): MultiExpansion, ("cython", True): SparseMultiExpansion,
           ("numpy", False): NumpyMultiExpansion, ("numpy", True): NumpySparseMultiExpansion}


def rule(reg, variant):
    return (int(REGULARIZATIONS[reg]), int(VARIANTS[variant]), 0.5, 0.1, 3.0, False)


def many_labels(n=900, d=4, k=60, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=1.5, size=(k, d))
    y = rng.integers(k, size=n)
    return np.ascontiguousarray(means[y] + rng.normal(size=(n, d))), y


def model(engine, sparse, k, d, budget=0, policy="oldest"):
    return KernelMultiPAModel(CLASSES[engine, sparse](
        d, k, kernel_params("gaussian", gamma=0.3), budget=budget,
        policy=int(budget_code(policy))))


def run_chunks(m, X, y, r, engine, size=53):
    scores, events = [], []
    for lo in range(0, len(X), size):
        s = np.empty((len(X[lo:lo + size]), m.n_classes))
        e = np.empty(len(s), dtype=np.int8)
        assert m.learn(X[lo:lo + size], y[lo:lo + size], r, 0.0, engine, s, e) == -1
        scores.append(s)
        events.append(e)
    return np.vstack(scores), np.hstack(events)


@pytest.mark.parametrize("reg, variant", RULES)
@pytest.mark.parametrize("budget, policy", POLICIES)
def test_pairs_give_the_dense_iterates_on_both_engines(reg, variant, budget, policy):
    X, y = many_labels()
    r = rule(reg, variant)
    out = {}
    for key in CLASSES:
        m = model(*key, 60, X.shape[1], budget, policy)
        out[key] = run_chunks(m, X, y, r, key[0]) + (m,)
    s0, e0, m0 = out["cython", False]
    assert np.count_nonzero(e0 == Event.UPDATED) > 100
    for key, (s, e, m) in out.items():
        np.testing.assert_array_equal(e, e0)
        assert np.max(np.abs(s - s0)) <= 1e-10, key
        assert np.max(np.abs(m.expansion.coef_ - m0.expansion.coef_)) <= 1e-10, key
        assert m.sq_norm == pytest.approx(m0.exact_sq_norm(), rel=1e-9)
        assert m.exact_sq_norm() == pytest.approx(m0.exact_sq_norm(), rel=1e-9)
    assert isinstance(out["cython", True][2].expansion, SparseMultiExpansion)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_a_new_class_renumbers_and_leaves_the_old_model(engine):
    X, y = many_labels(300, k=8, seed=1)
    sparse = model(engine, True, 8, 4)
    run_chunks(sparse, X, y, rule("none", "PA"), engine)
    before = sparse.expansion.coef_
    for position in (0, 3, 8):
        grown = sparse.with_class(position)
        assert type(grown.expansion) is type(sparse.expansion)
        np.testing.assert_array_equal(grown.expansion.coef_,
                                      np.insert(before, position, 0.0, axis=1))
        np.testing.assert_array_equal(sparse.expansion.coef_, before)
        Z = np.random.default_rng(2).normal(size=(20, 4))
        np.testing.assert_allclose(np.delete(grown.decision(Z), position, axis=1),
                                   sparse.decision(Z), atol=1e-12)
        assert grown.decision(Z)[:, position].tolist() == [0.0] * 20


def test_layout_choice_and_refusals():
    coef = np.array([[0.0, 1.0, -1.0, 0.0], [0.5, 0.0, 0.0, 0.0], [0.0] * 4])
    cls, val = pair_layout(coef)
    assert cls.tolist() == [[1, 2], [0, -1], [-1, -1]]
    assert val.tolist() == [[1.0, -1.0], [0.5, 0.0], [0.0, 0.0]]
    with pytest.raises(ValueError, match="more than two nonzeros"):
        pair_layout([[1.0, 1.0, 1.0]])
    state = MultiExpansion(2, 3, kernel_params("gaussian")).get_state()
    state.update(centers=np.zeros((1, 2)), sqnorms=np.zeros(1), coef=np.ones((1, 3)))
    assert type(multi_expansion("cython", state)) is MultiExpansion      # a dense row
    state["coef"] = np.array([[1.0, 0.0, -1.0]])
    assert type(multi_expansion("cython", state)) is SparseMultiExpansion
    assert type(multi_expansion("numpy", state)) is NumpySparseMultiExpansion
    state["policy"] = int(budget_code("merge"))
    assert type(multi_expansion("cython", state)) is SparseMultiExpansion  # no budget: no merge
    state["budget"] = 5
    assert type(multi_expansion("cython", state)) is MultiExpansion      # merging: dense
    with pytest.raises(ValueError, match="merge"):
        SparseMultiExpansion(2, 3, kernel_params("gaussian"), 5, int(budget_code("merge")))
    for cls in (SparseMultiExpansion, NumpySparseMultiExpansion):
        e = cls(2, 3, kernel_params("gaussian"))
        with pytest.raises(ValueError, match="at most two nonzero"):
            e.add(np.ones(2), np.ones(3))
        assert e.n_support == 0


def new_label_stream(n, d=3, seed=0):
    """Rows that each bring a new label (then a few that repeat labels)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.concatenate([np.arange(n - n // 4), rng.integers(0, n - n // 4, n // 4)])
    return X, y


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("regularization, budget, policy",
                         [("none", None, "auto"), ("objective", 40, "oldest"),
                          ("l2", 40, "smallest")])
def test_new_labels_in_a_chunk_and_one_event_at_a_time(engine, regularization, budget, policy):
    X, y = new_label_stream(240, seed=3)
    kw = dict(kernel="gaussian", gamma=0.5, engine=engine, regularization=regularization,
              budget=budget, budget_policy=policy, beta=3.0)
    chunk = RegularizedPAClassifier(**kw).partial_fit(X, y)
    events = RegularizedPAClassifier(**kw)
    for x, label in zip(X, y.tolist()):
        events.learn_one(x, label)
    assert isinstance(chunk._model.expansion, CLASSES[engine, True])
    assert isinstance(events._model.expansion, CLASSES[engine, True])
    np.testing.assert_array_equal(chunk.classes_, events.classes_)
    assert len(chunk.classes_) == 180
    Z = np.random.default_rng(4).normal(size=(30, 3))
    assert np.max(np.abs(chunk.decision_function(Z) - events.decision_function(Z))) <= 1e-10
    assert chunk._model.sq_norm == pytest.approx(chunk._model.exact_sq_norm(), rel=1e-9)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_save_load_and_pickle_round_trip(tmp_path, engine):
    X, y = new_label_stream(120, seed=5)
    est = RegularizedPAClassifier(kernel="gaussian", gamma=0.5, engine=engine).partial_fit(X, y)
    okl.save(est, tmp_path / "m.okl")
    for back in (okl.load(tmp_path / "m.okl"), pickle.loads(pickle.dumps(est))):
        assert isinstance(back._model.expansion, CLASSES[engine, True])
        np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
        back.partial_fit(X[:20], y[:20])
        est2 = pickle.loads(pickle.dumps(est))
        est2.partial_fit(X[:20], y[:20])
        np.testing.assert_array_equal(back.decision_function(X), est2.decision_function(X))


def test_a_file_of_the_dense_layout_loads_into_pairs(tmp_path):
    """A model saved by an okl that kept the dense coefficients loads (the file format is the
    same) and learns on in the pair layout."""
    X, y = new_label_stream(120, seed=6)
    est = RegularizedPAClassifier(kernel="gaussian", gamma=0.5).partial_fit(X, y)
    reference = pickle.loads(pickle.dumps(est))
    m = est._model
    est._model = KernelMultiPAModel(MultiExpansion.from_state(m.expansion.get_state()),
                                    m.sq_norm)
    okl.save(est, tmp_path / "dense.okl")
    back = okl.load(tmp_path / "dense.okl")
    assert type(back._model.expansion) is SparseMultiExpansion
    np.testing.assert_array_equal(back.decision_function(X), reference.decision_function(X))


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_a_failing_chunk_with_new_labels_leaves_the_model(engine):
    X, y = new_label_stream(100, seed=7)
    est = RegularizedPAClassifier(kernel="gaussian", gamma=0.5, engine=engine).partial_fit(
        X[:60], y[:60])
    before = pickle.dumps(est)
    bad = X[60:].copy()
    bad[30, 1] = np.nan
    with pytest.raises(ValueError):
        est.partial_fit(bad, y[60:])
    assert pickle.dumps(est) == before


def test_two_threads_learning_new_labels_do_not_crash():
    X, y = new_label_stream(200, seed=8)
    est = RegularizedPAClassifier(kernel="gaussian", gamma=0.5)
    errors = []

    def learn(lo):
        try:
            for i in range(lo, len(X), 2):
                est.learn_one(X[i], int(y[i]))
                est.predict(X[i:i + 1])
        except Exception as exc:            # noqa: BLE001 -- reported below
            errors.append(exc)
    threads = [threading.Thread(target=learn, args=(lo,)) for lo in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(est.classes_) == len(np.unique(y))
    assert est._model.sq_norm == pytest.approx(est._model.exact_sq_norm(), rel=1e-9)
