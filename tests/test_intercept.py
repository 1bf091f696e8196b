"""The classifier's default offset: the prior's shift (docs/defaults.md, section 1)."""
import io
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.preprocessing import StandardScaler

import okl
from okl import OnlineKernelClassifier
from okl._numpy.pointwise import (
    PRIOR_NOISE, PRIOR_RATE, PRIOR_START, prior_offset, prior_offsets, prior_state,
)
from okl.evaluation import progressive_validation


def shifted(n=1500, d=5, rates=(0.5, 0.9, 0.2), seed=0):
    """A generated stream whose positive rate goes through `rates`, in order."""
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n) < np.repeat(rates, n // len(rates))).astype(int)
    X = rng.normal(size=(n, d))
    X[:, 0] += np.where(y == 1, 0.75, -0.75)
    X[:, 1] += np.where(y == 1, 0.5, -0.5) * np.sign(X[:, 2])
    return X, y


def accuracy(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return 1.0 - progressive_validation(est, X, y, classes=np.unique(y)).error[-1]


def issue_stream(name):
    if name == "cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "wine":
        X, y = load_wine(return_X_y=True)
        y = (y == 1).astype(int)
    else:
        X, y = load_digits(return_X_y=True)
        y = (y == 0 if name == "digits 0" else y >= 5).astype(int)
    order = np.random.default_rng(0).permutation(len(X))
    return StandardScaler().fit_transform(X[order]), y[order]


def test_the_default_is_the_prior_shift_and_the_papers_model_is_one_parameter_away():
    assert OnlineKernelClassifier().fit_intercept == "prior"
    X, y = shifted(600)
    paper = OnlineKernelClassifier(fit_intercept=False, gamma=0.2).fit(X, y)
    default = OnlineKernelClassifier(gamma=0.2).fit(X, y)
    # the kernel part steps without b: its iterates are the papers'
    np.testing.assert_array_equal(default.dual_coef_, paper.dual_coef_)
    assert paper.intercept_ == 0.0
    np.testing.assert_allclose(default.decision_function(X),
                               paper.decision_function(X) + default.intercept_, rtol=0,
                               atol=1e-12)
    with pytest.raises(ValueError, match="fit_intercept"):
        OnlineKernelClassifier(fit_intercept="mean").fit(X, y)


@pytest.mark.parametrize("eta", ["scaled", "auto"])
@pytest.mark.parametrize("name, gamma", [("digits", 0.1), ("digits", 0.03), ("cancer", 0.1),
                                         ("digits 0", 0.1), ("wine", 0.03)])
def test_the_default_offset_costs_at_most_0005_on_the_issues_streams(name, gamma, eta):
    X, y = issue_stream(name)
    kw = dict(gamma=gamma, lam=1e-3, budget=None, eta=eta)
    paper = accuracy(OnlineKernelClassifier(fit_intercept=False, **kw), X, y)
    default = accuracy(OnlineKernelClassifier(**kw), X, y)
    assert default >= paper - 0.005
    if name in ("digits", "cancer"):
        norma = accuracy(OnlineKernelClassifier(fit_intercept=True, **kw), X, y)
        assert norma < paper - 0.005                   # what NORMA's step cost there


@pytest.mark.parametrize("rates, gamma", [((0.5, 0.9, 0.2), 0.2), ((0.5, 0.9, 0.2), 1.0),
                                          ((0.1, 0.5, 0.9), 0.2)])
def test_the_default_offset_helps_when_the_label_prior_shifts(rates, gamma):
    """With the papers' step the kernel part follows a shift of the prior slowly and the
    offset helps by 0.01 or more; the default step (eta="scaled") follows it faster by
    itself, and there the offset, capped by the kernel part's lag, still helps and the
    defaults are above the papers' step with the offset (docs/defaults.md, sections 1, 4)."""
    X, y = shifted(3000, rates=rates, seed=int(rates[0] == 0.1))
    X = StandardScaler().fit_transform(X)
    # the offset and the step alone: no change detection (a detector also follows the shift)
    kw = dict(gamma=gamma, lam=1e-3, budget=None, drift_detector=None)
    paper = accuracy(OnlineKernelClassifier(fit_intercept=False, eta="auto", **kw), X, y)
    offset = accuracy(OnlineKernelClassifier(eta="auto", **kw), X, y)
    scaled = accuracy(OnlineKernelClassifier(fit_intercept=False, **kw), X, y)
    default = accuracy(OnlineKernelClassifier(**kw), X, y)
    assert offset >= paper + 0.01
    assert default > scaled
    assert default >= offset


def test_the_offset_is_zero_inside_the_noise_and_follows_a_shift():
    # a stationary stream: the recent mean stays within 3 standard deviations
    noise = PRIOR_NOISE * np.sqrt(PRIOR_RATE / (2 - PRIOR_RATE))
    state = (1000.0, 0.2, 0.2 + 0.9 * noise * np.sqrt(1 - 0.04), 0.5, -0.9)
    assert prior_offset(state) == 0.0
    # a shift the kernel part's recent signs do not follow: b = S(recent - ybar) hbar
    assert prior_offset((1000.0, 0.0, 0.8, 0.5, -0.2)) == pytest.approx((0.8 - noise) * 0.5)
    assert prior_offset((1000.0, 0.0, -0.8, 0.5, 0.2)) == pytest.approx(-(0.8 - noise) * 0.5)
    # ... capped by the kernel part's lag behind the recent labels, 0 once it follows
    assert prior_offset((1000.0, 0.0, 0.8, 0.5, 0.7)) == pytest.approx(0.1 * 0.5)
    assert prior_offset((1000.0, 0.0, -0.8, 0.5, -0.7)) == pytest.approx(-0.1 * 0.5)
    assert prior_offset((1000.0, 0.0, 0.8, 0.5, 0.8)) == 0.0
    assert prior_offset((1000.0, 0.0, 0.8, 0.5, 0.9)) == 0.0      # ahead of the labels
    assert prior_offset((1000.0, 1.0, 1.0, 0.5, -1.0)) == 0.0     # one label seen
    h, y = np.array([0.3, -0.2, 0.5]), np.array([1.0, -1.0, 1.0])
    b, after = prior_offsets(PRIOR_START, h, y, np.array([1.0, 0.0, 2.0]))
    assert after[0] == 2.0                                # a zero weight does not count
    assert after[1] == 1.0 and after[3] == 0.5          # weight 2 at n = 2 replaces the means
    assert after[4] == 1.0                               # sign h of the rows counted
    assert b[0] == 0.0
    assert prior_offsets(PRIOR_START, -h, y)[1][4] == pytest.approx(-1.0 / 3.0)  # -1, 0, -1/3
    # a state saved without srecent (4 numbers) starts it at recent: no lag seen yet
    assert prior_state((9.0, 0.1, 0.6, 0.4)) == (9.0, 0.1, 0.6, 0.4, 0.6)
    assert prior_state(None) == PRIOR_START
    assert prior_offset(prior_state((1000.0, 0.0, 0.8, 0.5))) == 0.0


def test_engines_events_and_a_saved_stream_give_the_same_offsets():
    X, y = shifted(900)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(X))
    w[[5, 300, 301]] = 0.0
    kw = dict(gamma=0.3, classes=[0, 1])
    chunk = OnlineKernelClassifier(**kw).fit(X, y, sample_weight=w)
    numpy = OnlineKernelClassifier(engine="numpy", **kw).fit(X, y, sample_weight=w)
    events = OnlineKernelClassifier(**kw)
    for i in range(450):
        events.learn_one(X[i], y[i], sample_weight=w[i])
    buffer = io.BytesIO()
    okl.save(events, buffer)
    buffer.seek(0)
    events = okl.load(buffer)
    assert events._prior_state[0] == np.count_nonzero(w[:450])
    for i in range(450, len(X)):
        events.learn_one(X[i], y[i], sample_weight=w[i])
    assert chunk.intercept_ != 0.0                        # the prior moved: b is in play
    assert len(chunk._prior_state) == 5
    assert events.intercept_ == chunk.intercept_          # one event at a time: exactly
    assert events._prior_state == chunk._prior_state
    np.testing.assert_array_equal(events.decision_function(X), chunk.decision_function(X))
    assert numpy.intercept_ == pytest.approx(chunk.intercept_, abs=1e-12)
    np.testing.assert_allclose(numpy._prior_state, chunk._prior_state, rtol=0, atol=1e-12)
    np.testing.assert_allclose(numpy.decision_function(X), chunk.decision_function(X),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_a_state_saved_without_srecent_loads_and_continues(engine):
    """A state saved as (n, ybar, recent, hbar): pickles and okl.load continue it with
    srecent = recent (`okl._numpy.pointwise.prior_state`), chunks and events alike."""
    import pickle
    X, y = shifted(900)
    kw = dict(gamma=0.3, classes=[0, 1], engine=engine)
    est = OnlineKernelClassifier(**kw).fit(X[:450], y[:450])
    padded = est._prior_state[:4] + est._prior_state[2:3]
    est._prior_state = est._prior_state[:4]               # as saved before srecent
    old = pickle.dumps(est)
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    assert okl.load(buffer)._prior_state == padded
    new = pickle.loads(old)
    new._prior_state = padded
    ref = pickle.loads(pickle.dumps(new)).partial_fit(X[450:], y[450:])
    chunks = pickle.loads(old).partial_fit(X[450:], y[450:])
    events = pickle.loads(old)
    for i in range(450, len(X)):
        events.learn_one(X[i], y[i])
    for other in (chunks, events):
        assert other._prior_state == pytest.approx(ref._prior_state, abs=1e-12)
        assert other.intercept_ == pytest.approx(ref.intercept_, abs=1e-12)


def test_a_failed_call_leaves_the_offset_as_it_was():
    X, y = shifted(600)
    est = OnlineKernelClassifier(gamma=0.3).fit(X, y)
    before = (est.intercept_, est._prior_state, est.t_)
    bad = X[:5].copy()
    bad[3, 0] = np.nan
    with pytest.raises(ValueError):
        est.partial_fit(bad, y[:5])
    assert (est.intercept_, est._prior_state, est.t_) == before
    loaded = io.BytesIO()
    okl.save(est, loaded)
    loaded.seek(0)
    assert okl.load(loaded)._prior_state == est._prior_state


def test_averaged_models_pool_the_prior_state():
    from okl._averaging import average_models
    X, y = shifted(900)
    a = OnlineKernelClassifier(gamma=0.3, classes=[0, 1]).fit(X[:600], y[:600])
    b = OnlineKernelClassifier(gamma=0.3, classes=[0, 1]).fit(X[600:], y[600:])
    out = average_models([a, b])
    n = np.array([a._prior_state[0], b._prior_state[0]])
    assert out._prior_state[0] == n.sum()
    assert len(out._prior_state) == 5
    for j in (1, 2, 3, 4):
        assert out._prior_state[j] == pytest.approx(
            (n[0] * a._prior_state[j] + n[1] * b._prior_state[j]) / n.sum(), rel=1e-12)
    assert out.intercept_ == prior_offset(out._prior_state)


def test_with_a_third_class_the_offsets_stay_as_the_binary_model_left_them():
    X, y = shifted(900)
    est = OnlineKernelClassifier(gamma=0.3).fit(X, y)
    b = est.intercept_
    assert b != 0.0
    third = np.full(40, 2)
    est.partial_fit(X[:40] + 3.0, third)                  # a third label: k = 3 offsets
    np.testing.assert_array_equal(est.intercept_, [-0.5 * b, 0.5 * b, 0.0])
    est.partial_fit(X[:200], y[:200])
    np.testing.assert_array_equal(est.intercept_, [-0.5 * b, 0.5 * b, 0.0])     # fixed
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    loaded = okl.load(buffer)
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))


def test_fit_intercept_true_is_normas_offset_step():
    """b_{t+1} = b_t - eta_t g_t beside the kernel part's step (docs/algorithms.md, 7.1),
    written out: the previous default, one parameter away."""
    X, y = shifted(300)
    gamma, lam = 0.3, 1e-3
    est = OnlineKernelClassifier(fit_intercept=True, gamma=gamma, lam=lam, eta="auto",
                                 budget=None, classes=[0, 1]).fit(X, y)
    centres, coef, b = [], [], 0.0
    for t, (x, label) in enumerate(zip(X, np.where(y > 0, 1.0, -1.0)), 1):
        h = sum(a * np.exp(-gamma * np.sum((c - x) ** 2)) for c, a in zip(centres, coef))
        eta = t ** -0.5 / (lam + 1.0)
        g = -label if label * (h + b) <= 1.0 else 0.0
        coef = [a * (1.0 - lam * eta) for a in coef]
        if g:
            centres.append(x)
            coef.append(-eta * g)
        b -= eta * g
    assert est.intercept_ == pytest.approx(b, abs=1e-10)
    np.testing.assert_allclose(est.dual_coef_, coef, rtol=0, atol=1e-10)


def test_the_compiled_prior_offset_is_its_twin():
    """okl._core._pointwise.prior_offsets (the cython engine's chunks and events) takes the
    twin's constants and operations: the same offsets and state on a long weighted stream."""
    from okl._core import _pointwise
    assert (_pointwise.PRIOR_RATE, _pointwise.PRIOR_NOISE) == (PRIOR_RATE, PRIOR_NOISE)
    rng = np.random.default_rng(7)
    n = 5000
    y = np.where(rng.random(n) < np.repeat([0.5, 0.9, 0.2, 0.6], n // 4), 1.0, -1.0)
    h = rng.normal(scale=2.0, size=n)
    h[::97] = 0.0                                    # predicts -1, as the twin
    w = rng.choice([0.0, 0.5, 1.0, 3.0], size=n, p=[0.1, 0.2, 0.6, 0.1])
    for start, weight in [((3.0, 0.2, -0.1, 0.7, 0.4), None), ((3.0, 0.2, -0.1, 0.7, 0.4), w),
                          ((3.0, 0.2, -0.1, 0.7), w)]:
        b, state = _pointwise.prior_offsets(start, h, y, weight)
        b_twin, state_twin = prior_offsets(start, h, y, weight)
        np.testing.assert_allclose(b, b_twin, rtol=0, atol=1e-14)
        np.testing.assert_allclose(state, state_twin, rtol=0, atol=1e-14)
        assert np.count_nonzero(b) > n // 4          # the shifts are seen


@pytest.mark.parametrize("state", [[10.0, 0.1, 0.5, 0.3, 1.5], [10.0, 0.1, 0.5], [10.0, 0.1, 1.5, 0.3],
                                   [-1.0, 0.1, 0.5, 0.3, 0.2], [10.0, 0.1, 0.5, -0.3, 0.2]])
def test_a_tampered_prior_state_is_refused(state):
    import json
    from okl._persist import ModelFileError, _read
    X, y = shifted(300)
    buffer = io.BytesIO()
    okl.save(OnlineKernelClassifier(gamma=0.3).fit(X, y), buffer)
    header, arrays = _read(io.BytesIO(buffer.getvalue()), "x")
    saved = header["attrs"]["_prior_state"]
    assert len(saved) == 5
    for edit in (state, saved):                          # the tampered state, then the saved one
        header["attrs"]["_prior_state"] = edit
        out = io.BytesIO()
        np.savez(out, __header__=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                 **arrays)
        out.seek(0)
        if edit is state:
            with pytest.raises(ModelFileError, match="_prior_state"):
                okl.load(out)
        else:
            assert okl.load(out)._prior_state == tuple(saved)
