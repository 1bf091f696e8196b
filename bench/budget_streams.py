"""Streams and reference drivers for the budget / feature-model frontier (bench_budget.py).

Streams (scikit-learn's bundled data or generated, never downloaded):
- "digits": 8x8 digits, odd vs even, standardized, 3 shuffled passes (5391 steps);
- "cancer": breast cancer, standardized, 8 shuffled passes (4552 steps);
- "friedman": make_friedman1 regression, d = 10, noise 1, 20 000 fresh samples
  (stationary; y standardized).
The two small data sets are looped because they are small; a repeated sample is
new to a budgeted learner that has forgotten it and familiar to the unbudgeted
one, so looping favours the unbudgeted reference: the gaps reported are, if
anything, pessimistic for the budgets.

`run_expansion` is a readable driver of the pointwise rule (docs/algorithms.md, sections 1-3,
the estimators' own step: predict, shrink by 1 - eta lam, add -eta g K(x, .))
with every budget policy: None, "oldest", "smallest" (the rules of
KernelExpansion) and "merge" (BSGD, okl._core._merge).  `run_features` runs
the same rule on random Fourier (FOGD) or Nystroem (NOGD) features through
okl._core._linear.
"""
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_friedman1
from sklearn.preprocessing import StandardScaler

from okl._core._linear import LinearModel
from okl._core._merge import merge_find
from okl._feature_maps import NystroemFeatures, RandomFourierFeatures
from okl._core._pointwise import fit_chunk
from okl._numpy.losses import derivative
from okl._numpy.pointwise import make_schedule, make_state
from okl.losses import loss_spec
from okl.schedules import step_sizes

STREAMS = {}


def stream(name):
    """(X, y, task, params): y in {-1, +1} for classification."""
    if name in STREAMS:
        return STREAMS[name]
    rng = np.random.default_rng(0)
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        X, y = StandardScaler().fit_transform(X), np.where(y % 2, 1.0, -1.0)
        idx = np.concatenate([rng.permutation(len(y)) for _ in range(3)])
        out = (X[idx], y[idx], "classification", dict(gamma=0.02, lam=1e-4, eta_decay=0.5))
    elif name == "cancer":
        X, y = load_breast_cancer(return_X_y=True)
        X, y = StandardScaler().fit_transform(X), np.where(y == 1, 1.0, -1.0)
        idx = np.concatenate([rng.permutation(len(y)) for _ in range(8)])
        out = (X[idx], y[idx], "classification", dict(gamma=0.03, lam=1e-4, eta_decay=0.5))
    elif name == "friedman":
        X, y = make_friedman1(20_000, n_features=10, noise=1.0, random_state=0)
        y = (y - y.mean()) / y.std()
        out = (X, y, "regression", dict(gamma=0.5, lam=1e-3, eta_decay=0.6))
    else:
        raise KeyError(name)
    X = np.ascontiguousarray(out[0], dtype=np.float64)
    STREAMS[name] = (X, np.ascontiguousarray(out[1]), out[2], out[3])
    return STREAMS[name]


def schedule(n, params):
    t = np.arange(1, n + 1, dtype=np.float64)
    lam_t = np.full(n, params["lam"])
    return step_sizes("auto", params["eta_decay"], t, lam_t, 1.0), lam_t   # C_K^2 = 1


def progressive_error(task, y, pred):
    if task == "classification":
        return float(np.mean(np.where(pred >= 0, 1.0, -1.0) != y))
    return float(np.mean((pred - y) ** 2))


def loss_of(task):
    """The loss spec (okl.losses.loss_spec) of the task's rule."""
    return loss_spec("hinge" if task == "classification" else "squared")


def run_expansion(name, budget=None, policy="oldest", n=None):
    """Progressive predictions of the pointwise rule with a budget policy (NumPy driver)."""
    X, y, task, params = stream(name)
    X, y = X[:n], y[:n]
    n, d = X.shape
    gamma, loss = params["gamma"], loss_of(task)
    eta, lam = schedule(n, params)
    cap = (budget + 1) if budget else n
    C, c, s, m, nxt = np.empty((cap, d)), np.empty(cap), 1.0, 0, 0
    pred = np.empty(n)
    n_merges = 0
    for t in range(n):
        x = X[t]
        f = s * float(c[:m] @ np.exp(-gamma * ((C[:m] - x) ** 2).sum(axis=1))) if m else 0.0
        pred[t] = f
        g = y[t] * derivative(loss, y[t] * f) if task == "classification" else derivative(loss, f - y[t])
        factor = 1.0 - lam[t] * eta[t]
        if factor <= 0:
            m, nxt, s = 0, 0, 1.0
        else:
            s *= factor
            if s < 1e-9:
                c[:m] *= s
                s = 1.0
        if g == 0.0:
            continue
        a = -eta[t] * g / s
        if not budget or m < budget:
            C[m], c[m] = x, a
            m += 1
        elif policy == "oldest":
            C[nxt], c[nxt] = x, a
            nxt = (nxt + 1) % budget
        elif policy == "smallest":
            j = int(np.argmin(np.abs(c[:m])))
            if abs(a) > abs(c[j]):
                C[j], c[j] = x, a
        elif policy == "merge":
            C[m], c[m] = x, a
            mm, partner, h, cz, _ = merge_find(C[:m + 1], c[:m + 1], gamma)
            if partner >= 0:
                C[partner] = h * C[mm] + (1.0 - h) * C[partner]
                c[partner] = cz
                n_merges += 1
            C[mm], c[mm] = C[m], c[m]
        else:
            raise ValueError(policy)
    return dict(pred=pred, error=progressive_error(task, y, pred), centers=C[:m].copy(),
                coef=s * c[:m], n_support=m, n_merges=n_merges, task=task)


def run_features(name, approximation, n_components, random_state=0, n=None, chunk=1024):
    """Progressive predictions of the same rule on fixed-size features (Cython loop)."""
    X, y, task, params = stream(name)
    X, y = X[:n], y[:n]
    n, d = X.shape
    gamma, loss = params["gamma"], loss_of(task)
    eta, lam = schedule(n, params)
    pred = np.empty(n)
    start = 0
    if approximation == "fourier":
        fmap = RandomFourierFeatures("gaussian", gamma, n_components, random_state).fit(d)
        model = LinearModel(n_components)
    else:   # NOGD: exact until n_components centres, then Nystroem on them
        exact = _exact_until(X, y, task, params, n_components)
        start, centers, coef = exact["steps"], exact["centers"], exact["coef"]
        pred[:start] = exact["pred"]
        fmap = NystroemFeatures(centers, "gaussian", gamma)
        model = LinearModel(fmap.n_components)
        model.set_coef(fmap.weights_from_expansion(coef))
    out = np.empty(chunk)
    for lo in range(start, n, chunk):
        hi = min(lo + chunk, n)
        Z = fmap.transform(X[lo:hi])
        failed, _ = fit_chunk(model, Z, y[lo:hi], make_schedule(lam=params["lam"]), loss,
                              make_state(), out[:hi - lo], None, eta[lo:hi], np.ones(hi - lo))
        assert failed == -1
        pred[lo:hi] = out[:hi - lo]
    return dict(pred=pred, error=progressive_error(task, y, pred), fmap=fmap, model=model,
                task=task)


def _exact_until(X, y, task, params, n_centers):
    """The unbudgeted rule until it holds n_centers centres (NOGD's first phase)."""
    n = len(X)
    gamma, loss = params["gamma"], loss_of(task)
    eta, lam = schedule(n, params)
    C, c, m = np.empty((n_centers, X.shape[1])), np.empty(n_centers), 0
    pred = []
    t = 0
    while t < n and m < n_centers:
        x = X[t]
        f = float(c[:m] @ np.exp(-gamma * ((C[:m] - x) ** 2).sum(axis=1))) if m else 0.0
        pred.append(f)
        g = y[t] * derivative(loss, y[t] * f) if task == "classification" else derivative(loss, f - y[t])
        c[:m] *= max(1.0 - lam[t] * eta[t], 0.0)
        if g != 0.0:
            C[m], c[m] = x, -eta[t] * g
            m += 1
        t += 1
    return dict(steps=t, centers=C[:m].copy(), coef=c[:m].copy(), pred=np.array(pred))


def time_per_step(fn, repeat=3):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        steps = fn()
        best = min(best, (time.perf_counter() - t0) / steps)
    return best
