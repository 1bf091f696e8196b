"""The defaults, measured (docs/defaults.md): every estimator untuned against its best width.

    python bench/defaults.py table    # progressive accuracy / RMSE, defaults vs tuned, river beside
    python bench/defaults.py cost     # us per event of a 1e5-event stream, d = 20, with the defaults
    python bench/defaults.py intercept  # the offset on the issue's streams
    python bench/defaults.py step     # the default step against eta="auto"

Streams (scikit-learn's bundled data): digits (0-4 vs 5-9, d = 64), breast cancer (d = 30) and
diabetes (regression, d = 10), each shuffled once (seed 0) and standardised online with
okl's OnlineStandardScaler (each event is scaled by the moments of the events up to and
including it, as a StreamPipeline does), then one progressive pass: every event is predicted
by the model of the events before it, then learned.  "tuned" is fit_intercept=False (where the
estimator has it) with the width gamma of the grid (1 / d) * 2^k, k = -3 ... 5, that was best in
hindsight on that stream; "previous defaults" is gamma=1, budget=None, eta="auto" and NORMA's offset step
(the defaults before docs/defaults.md).  river's LogisticRegression, LinearRegression, PAClassifier and
PARegressor run untuned on the same scaled events (river is a bench-only dependency).
"""
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits

from okl import (
    CoefficientRegularizedClassifier, OnlineKernelClassifier, OnlineKernelRegressor,
    RegularizedPAClassifier,
)
from okl.evaluation import progressive_validation
from okl.preprocessing import OnlineStandardScaler

GRID = 2.0 ** np.arange(-3, 6)


def streams():
    """{name: (Z, y, task)}: shuffled once, scaled online."""
    out = {}
    for name, (X, y), task in (
            ("digits", load_digits(return_X_y=True), "classification"),
            ("cancer", load_breast_cancer(return_X_y=True), "classification"),
            ("diabetes", load_diabetes(return_X_y=True), "regression")):
        order = np.random.default_rng(0).permutation(len(X))
        X, y = X[order], y[order]
        if name == "digits":
            y = (y >= 5).astype(int)
        scaler = OnlineStandardScaler()
        Z = np.empty_like(X, dtype=np.float64)
        for i, x in enumerate(X):
            scaler.learn_one(x)
            Z[i] = scaler.transform_one(x)
        out[name] = (Z, y, task)
    return out


CLASSIFIERS = {
    "OnlineKernelClassifier": lambda **kw: OnlineKernelClassifier(**kw),
    "OnlineKernelClassifier(logistic)": lambda **kw: OnlineKernelClassifier(loss="logistic",
                                                                            **kw),
    "CoefficientRegularizedClassifier": lambda **kw: CoefficientRegularizedClassifier(**kw),
    "RegularizedPAClassifier(gaussian)": lambda **kw: RegularizedPAClassifier(
        kernel="gaussian", **kw),
}
REGRESSORS = {
    "OnlineKernelRegressor": lambda **kw: OnlineKernelRegressor(**kw),
    "OnlineKernelRegressor(pinball)": lambda **kw: OnlineKernelRegressor(loss="pinball", **kw),
}


def score(est, Z, y, task):
    """Progressive accuracy (classification) or RMSE (regression) of one pass."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = progressive_validation(est, Z, y)
    if task == "classification":
        return 1.0 - result.error[-1]
    return float(np.sqrt(result.error[-1]))


def river_score(model, Z, y, task):
    hits, sq = 0, 0.0
    for z, target in zip(Z, y):
        x = dict(enumerate(z))
        p = model.predict_one(x)
        if task == "classification":
            hits += int(p == bool(target)) if p is not None else 0
            model.learn_one(x, bool(target))
        else:
            sq += ((p or 0.0) - target) ** 2
            model.learn_one(x, float(target))
    return hits / len(y) if task == "classification" else float(np.sqrt(sq / len(y)))


def has_intercept(make):
    return "fit_intercept" in make().get_params()


def previous(make):
    """The previous defaults: gamma=1, no budget, NORMA's offset step (regressor included),
    eta="auto"."""
    from okl._numpy.codes import Offset
    est = make(gamma=1.0)
    params = est.get_params()
    if "eta" in params:
        est.set_params(eta="auto")
    if "budget" in params:
        est.set_params(budget=None)
    if "fit_intercept" in params:
        est.set_params(fit_intercept=True)
        est._offset = lambda: Offset.STEP           # the rule every pointwise learner had
    return est


def table():
    data = streams()
    rows = []
    for name, (Z, y, task) in data.items():
        learners = CLASSIFIERS if task == "classification" else REGRESSORS
        better = max if task == "classification" else min
        d = Z.shape[1]
        for label, make in learners.items():
            default = score(make(), Z, y, task)
            before = score(previous(make), Z, y, task)
            extra = dict(fit_intercept=False) if has_intercept(make) else {}
            tuned = {g: score(make(gamma=float(g / d), **extra), Z, y, task) for g in GRID}
            best = better(tuned, key=tuned.get)
            rows.append((name, label, before, default, tuned[best], f"{best:g}/d"))
        try:
            from river import linear_model
        except ImportError:
            continue
        if task == "classification":
            refs = {"river LogisticRegression": linear_model.LogisticRegression(),
                    "river PAClassifier": linear_model.PAClassifier()}
        else:
            refs = {"river LinearRegression": linear_model.LinearRegression(),
                    "river PARegressor": linear_model.PARegressor()}
        for label, model in refs.items():
            rows.append((name, label, None, river_score(model, Z, y, task), None, "-"))
    print("| stream | estimator | previous defaults | defaults | fit_intercept=False, best gamma "
          "| best gamma |")
    print("|---|---|---|---|---|---|")
    for name, label, before, default, tuned, best in rows:
        metric = "RMSE" if name == "diabetes" else "acc"
        before = "-" if before is None else f"{before:.4f}"
        tuned = "-" if tuned is None else f"{tuned:.4f}"
        print(f"| {name} ({metric}) | {label} | {before} | {default:.4f} | {tuned} | {best} |")


def cost(n=100_000, d=20, block=1000):
    """us per event (predict_one + learn_one) with the defaults, block by block."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)
    est = OnlineKernelRegressor()
    times = []
    for lo in range(0, n, block):
        start = time.perf_counter()
        for i in range(lo, lo + block):
            est.predict_one(X[i])
            est.learn_one(X[i], y[i])
        times.append((time.perf_counter() - start) / block * 1e6)
    print(f"OnlineKernelRegressor() on {n} events, d = {d}, one at a time: "
          f"{est.n_support_} centres at the end (budget {est.budget!r})")
    print("events | us per event")
    for k in (0, 1, 2, 5, 10, 20, 50, len(times) - 1):
        print(f"{k * block}-{(k + 1) * block} | {times[k]:.1f}")
    print(f"first 1000 after the warm-up (events 1000-2000): {times[1]:.1f} us; "
          f"last 1000: {times[-1]:.1f} us; ratio {times[-1] / times[1]:.2f}")


def intercept():
    """The issue's intercept streams: batch-standardised inputs, lam = 1e-3, no budget."""
    from sklearn.preprocessing import StandardScaler
    print("| stream | gamma | fit_intercept=False | fit_intercept=True (NORMA's offset) | default |")
    print("|---|---|---|---|---|")
    digits = load_digits(return_X_y=True)
    cases = (("digits 0-4 vs 5-9", digits[0], digits[1] >= 5, (0.1, 0.03)),
             ("breast cancer", *load_breast_cancer(return_X_y=True), (0.1,)),
             ("digits 0 vs rest (10% positive)", digits[0], digits[1] == 0, (0.1, 0.03)))
    for name, X, y, gammas in cases:
        order = np.random.default_rng(0).permutation(len(X))
        X, y = StandardScaler().fit_transform(X[order]), np.asarray(y)[order].astype(int)
        for gamma in gammas:
            accs = [score(OnlineKernelClassifier(gamma=gamma, budget=None, **kw), X, y,
                          "classification")
                    for kw in (dict(fit_intercept=False), dict(fit_intercept=True), {})]
            print(f"| {name} | {gamma} | " + " | ".join(f"{a:.4f}" for a in accs) + " |")
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (3500, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=3500) + 40.0
    rmse = {}
    for label, target, kw in (("default", y, {}), ("centred target", y - 40.0,
                                                   dict(fit_intercept=False))):
        est = OnlineKernelRegressor(gamma=1.0, budget=None, **kw).fit(X[:2500], target[:2500])
        rmse[label] = np.sqrt(np.mean((est.predict(X[2500:]) - target[2500:]) ** 2))
    print(f"\ny = sin(2 x1) + noise + 40, gamma = 1, 2500 steps: held-out RMSE {rmse['default']:.4f} "
          f"(default) vs {rmse['centred target']:.4f} (centred target, no offset): "
          f"{rmse['default'] / rmse['centred target']:.2f}x")


def step():
    """The default step against eta="auto" (docs/defaults.md, section 4).

    Regressors: eta="scaled" (the default) against the papers' eta="auto" on diabetes and
    on the README's demo stream (okl._demo, 578 events, gamma = 2 as the demo; pinball loss of
    the progressive predictions).  The hinge classifier keeps eta="auto"; c times it is shown
    for the record.
    """
    from okl._demo import make_stream
    from okl.losses import loss_value
    data = streams()
    print("| stream | estimator | eta='auto' | default (eta='scaled') |")
    print("|---|---|---|---|")
    Z, y, _ = data["diabetes"]
    for loss in ("pinball", "absolute", "epsilon_insensitive", "huber", "squared"):
        kw = dict(epsilon=1.0) if loss in ("huber", "epsilon_insensitive") else {}
        auto = score(OnlineKernelRegressor(loss=loss, eta="auto", **kw), Z, y, "regression")
        default = score(OnlineKernelRegressor(loss=loss, **kw), Z, y, "regression")
        print(f"| diabetes (RMSE) | OnlineKernelRegressor({loss}) | {auto:.2f} | {default:.2f} |")
    X, y = make_stream(578, seed=0)
    for tau in (0.1, 0.5, 0.9):
        pin = []
        for eta in ("auto", "scaled"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = OnlineKernelRegressor(loss="pinball", quantile=tau, gamma=2.0, eta=eta)
                f = progressive_validation(est, X, y).predictions
            pin.append(loss_value("pinball", f - y, tau=tau).mean())
        print(f"| demo, 578 events (pinball loss) | OnlineKernelRegressor(pinball, quantile={tau}) "
              f"| {pin[0]:.4f} | {pin[1]:.4f} |")
    print("\n| stream | OnlineKernelClassifier (hinge) | eta='auto' (default) | 2x | 4x | 8x |")
    print("|---|---|---|---|---|---|")
    for name in ("digits", "cancer"):
        Z, y, _ = data[name]
        accs = [score(OnlineKernelClassifier(
            eta="auto" if c == 1 else (lambda t, c=c: c * t ** -0.5 / (1 + 1e-3))), Z, y,
            "classification") for c in (1, 2, 4, 8)]
        print(f"| {name} (acc) | | " + " | ".join(f"{a:.4f}" for a in accs) + " |")


if __name__ == "__main__":
    {"table": table, "cost": cost, "intercept": intercept, "step": step}[
        sys.argv[1] if len(sys.argv) > 1 else "table"]()
