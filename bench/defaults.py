"""The defaults, measured (docs/defaults.md): every estimator untuned against its best width.

    python bench/defaults.py table      # every estimator: defaults vs fit_intercept=False and
                                        # the best width, river's peers beside; PairwiseLearner
    python bench/defaults.py widths     # the first-chunk learners' width: five streams, one
                                        # event at a time
    python bench/defaults.py warmup     # gamma="scale"'s warm-up against the first-chunk rule,
                                        # chunks of 1000 and one event at a time
    python bench/defaults.py cost       # us per event of a 1e5-event stream, d = 20, defaults
    python bench/defaults.py intercept  # the classifier's offset designs; the regressor's offset
    python bench/defaults.py offset_steps  # the default offset under either step, ten streams
    python bench/defaults.py step       # the default step against eta="auto" (regressors,
                                        # then the classifier's on 16 streams)
    python bench/defaults.py hinge      # the classifier's step only
    python bench/defaults.py diagnosis  # why the papers' hinge step was weak on digits
    python bench/defaults.py approx     # the hinge step on Nystroem and Fourier features
    python bench/defaults.py approxcost # its cost per event on features (run under the lock)
    python bench/defaults.py untuned    # the kernel learners untuned beside river's peers

Streams (scikit-learn's bundled data): digits (0-4 vs 5-9, d = 64), breast cancer (d = 30) and
diabetes (regression, d = 10), each shuffled once (seed 0) and standardised online with
okl's OnlineStandardScaler (each event is scaled by the moments of the events up to and
including it, as a StreamPipeline does), then one progressive pass: every event is predicted
by the model of the events before it, then learned.  "tuned" is fit_intercept=False (where the
estimator has it) with the width gamma of the grid (1 / d) * 2^k, k = -3 ... 5, that was best in
hindsight on that stream; "gamma=1 (before)" is gamma=1, budget=None, eta="auto" and NORMA's
offset step (the defaults before docs/defaults.md).  river's LogisticRegression,
LinearRegression, PA and k-nearest-neighbour models run untuned on the same scaled events (river
is a bench-only dependency; its data sets are never used).
"""
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits

from okl import (
    CoefficientRegularizedClassifier, MultiKernelClassifier, MultiKernelRegressor,
    OnlineKernelClassifier, OnlineKernelRegressor, RegularizedPAClassifier,
)
from okl.evaluation import progressive_validation
from okl.kernels import kernel_matrix

from scaled_streams import online_scaled

GRID = 2.0 ** np.arange(-3, 6)


def streams():
    """{name: (Z, y, task)}: shuffled once, scaled online."""
    out = {}
    for name, (X, y), task in (
            ("digits", load_digits(return_X_y=True), "classification"),
            ("cancer", load_breast_cancer(return_X_y=True), "classification"),
            ("diabetes", load_diabetes(return_X_y=True), "regression")):
        if name == "digits":
            y = (y >= 5).astype(int)
        out[name] = (*online_scaled(X, y), task)
    return out


def _pa(**kw):
    return RegularizedPAClassifier(kernel="gaussian", **kw)


def _multikernel(make):
    """A multi-kernel learner: "gamma" is one width (gammas=[gamma]); budget "auto" as the others
    have none of its own."""
    def build(gamma=None, **kw):
        return make(**kw) if gamma is None else make(gammas=[gamma], **kw)
    return build


#: label -> (constructor taking the estimator's keywords, the previous defaults' keywords)
CLASSIFIERS = {
    "OnlineKernelClassifier": (OnlineKernelClassifier, {}),
    "OnlineKernelClassifier(logistic)": (
        lambda **kw: OnlineKernelClassifier(loss="logistic", **kw), {}),
    "RegularizedPAClassifier(linear)": (RegularizedPAClassifier, None),
    "RegularizedPAClassifier(gaussian)": (_pa, {}),
    "CoefficientRegularizedClassifier": (CoefficientRegularizedClassifier,
                                         dict(n_centers=100, lam=0.01)),
    "MultiKernelClassifier": (_multikernel(MultiKernelClassifier), None),
}
REGRESSORS = {
    "OnlineKernelRegressor": (OnlineKernelRegressor, {}),
    "OnlineKernelRegressor(pinball)": (lambda **kw: OnlineKernelRegressor(loss="pinball", **kw),
                                       {}),
    "MultiKernelRegressor(learner='sgd')": (
        _multikernel(lambda **kw: MultiKernelRegressor(learner="sgd", **kw)), None),
}


def classification_sets():
    """The binary and multiclass streams of the width tables (sklearn's bundled sets)."""
    from sklearn.datasets import load_iris, load_wine
    digits = load_digits(return_X_y=True)
    return {"digits 0-4 vs 5-9": (digits[0], (digits[1] >= 5).astype(int)),
            "digits (10 classes)": digits,
            "breast cancer": load_breast_cancer(return_X_y=True),
            "wine (3 classes)": load_wine(return_X_y=True),
            "iris (3 classes)": load_iris(return_X_y=True)}


def score(est, Z, y, task, chunk_size=1000):
    """Progressive accuracy (classification) or RMSE (regression) of one pass."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = progressive_validation(est, Z, y, chunk_size=chunk_size)
    if task == "classification":
        return 1.0 - result.error[-1]
    return float(np.sqrt(result.error[-1]))


def river_score(model, Z, y, task, labels=False):
    """river's progressive score on the same events (labels: the raw labels, else bool)."""
    hits, sq = 0, 0.0
    for z, target in zip(Z, y):
        x = dict(enumerate(z))
        p = model.predict_one(x)
        if task == "classification":
            target = target if labels else bool(target)
            hits += int(p == target) if p is not None else 0
            model.learn_one(x, target)
        else:
            sq += ((p or 0.0) - target) ** 2
            model.learn_one(x, float(target))
    return hits / len(y) if task == "classification" else float(np.sqrt(sq / len(y)))


def has_intercept(make):
    return "fit_intercept" in make().get_params()


def has_width(make):
    params = make().get_params()
    return "gamma" in params and params.get("kernel", "gaussian") != "linear" or "gammas" in params


def previous(make, extra):
    """The previous defaults: gamma=1, no budget, NORMA's offset step (regressor included),
    eta="auto", and `extra` (CoefficientRegularizedClassifier: n_centers=100, lam=0.01)."""
    from okl._numpy.codes import Offset
    est = make(gamma=1.0, **extra)
    params = est.get_params()
    if "eta" in params:
        est.set_params(eta="auto")
    if "budget" in params:
        est.set_params(budget=None)
    if "fit_intercept" in params:
        est.set_params(fit_intercept=True)
        est._offset = lambda: Offset.STEP           # the rule every pointwise learner had
    return est


def river_peers(task):
    """river's untuned peers (bench-only dependency): a linear model, PA, k nearest neighbours."""
    try:
        from river import linear_model, neighbors
    except ImportError:
        return {}
    if task == "classification":
        return {"river LogisticRegression": linear_model.LogisticRegression(),
                "river PAClassifier": linear_model.PAClassifier(),
                "river KNNClassifier": neighbors.KNNClassifier()}
    return {"river LinearRegression": linear_model.LinearRegression(),
            "river PARegressor": linear_model.PARegressor(),
            "river KNNRegressor": neighbors.KNNRegressor()}


def table():
    """Every estimator with its defaults, against fit_intercept=False and the best width."""
    data = streams()
    rows = []
    for name, (Z, y, task) in data.items():
        learners = CLASSIFIERS if task == "classification" else REGRESSORS
        better = max if task == "classification" else min
        d = Z.shape[1]
        for label, (make, extra) in learners.items():
            default = score(make(), Z, y, task)
            before = None if extra is None else score(previous(make, extra), Z, y, task)
            fixed = dict(fit_intercept=False) if has_intercept(make) else {}
            if has_width(make):
                tuned = {g: score(make(gamma=float(g / d), **fixed), Z, y, task) for g in GRID}
                best = better(tuned, key=tuned.get)
                rows.append((name, label, before, default, tuned[best], f"{best:g}/d"))
            else:
                rows.append((name, label, before, default,
                             score(make(**fixed), Z, y, task) if fixed else None, "-"))
        for label, model in river_peers(task).items():
            rows.append((name, label, None, river_score(model, Z, y, task), None, "-"))
    print("| stream | estimator | gamma=1 (before) | defaults | fit_intercept=False, best gamma "
          "| best gamma |")
    print("|---|---|---|---|---|---|")
    for name, label, before, default, tuned, best in rows:
        metric = "RMSE" if name == "diabetes" else "acc"
        before = "-" if before is None else f"{before:.4f}"
        tuned = "-" if tuned is None else f"{tuned:.4f}"
        print(f"| {name} ({metric}) | {label} | {before} | {default:.4f} | {tuned} | {best} |")
    print("\nThe multi-kernel learners' own widths (gammas='auto'), with and without their offset:")
    for name, (Z, y, task) in data.items():
        make, kw = ((MultiKernelClassifier, {}) if task == "classification"
                    else (MultiKernelRegressor, {"learner": "sgd"}))     # the first-order pool
        print(f"{name}: {make.__name__}({kw or ''}) {score(make(**kw), Z, y, task):.4f}, "
              f"fit_intercept=False {score(make(fit_intercept=False, **kw), Z, y, task):.4f}")
    pairwise(data)


def pairwise(data):
    """PairwiseLearner (it ranks pairs; progressive validation does not apply): learned one
    event at a time on the first half of each stream, ranking error on the second half."""
    from okl import PairwiseLearner
    from okl.evaluation import ranking_error

    def run(**kw):
        est = PairwiseLearner(buffer=200, random_state=0, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(half):
                est.partial_fit(Z[i:i + 1], y[i:i + 1])
        return ranking_error(est, Z[half:], y[half:])

    print("\n| stream (ranking error, second half) | defaults (pair_kernel='linear') "
          "| pair_kernel='difference', gamma='scale' | difference, best gamma | best gamma |")
    print("|---|---|---|---|---|")
    for name, (Z, y, _) in data.items():
        half, d = len(Z) // 2, Z.shape[1]
        tuned = {g: run(pair_kernel="difference", gamma=float(g / d)) for g in GRID}
        best = min(tuned, key=tuned.get)
        print(f"| {name} | {run():.4f} | {run(pair_kernel='difference'):.4f} | "
              f"{tuned[best]:.4f} | {best:g}/d |")


def widths():
    """gamma="scale" of the first-chunk learners against their width grid, one event at a
    time (docs/defaults.md, section 2): five streams, three of them multiclass.  "before" is
    gamma = 1/d (the rule on standardised rows) with the previous CoefficientRegularized
    defaults (100 centres, lam = 1e-2); "100 centres" is its defaults with n_centers=100.
    OnlineKernelClassifier (the rule itself, over its warm-up) is shown for comparison."""
    sets = classification_sets()
    learners = {"RegularizedPAClassifier(gaussian)": (_pa, {}, None),
                "CoefficientRegularizedClassifier": (CoefficientRegularizedClassifier,
                                                     dict(n_centers=100, lam=0.01),
                                                     dict(n_centers=100)),
                "OnlineKernelClassifier": (OnlineKernelClassifier, {}, None)}
    print("| stream | estimator | before | defaults | 100 centres | "
          + " | ".join(f"{g:g}/d" for g in GRID)
          + " | river LogisticRegression | river KNNClassifier |")
    print("|---|---|---|---|---|" + "---|" * len(GRID) + "---|---|")
    for name, (X, y) in sets.items():
        Z, y = online_scaled(X, y)
        d = Z.shape[1]
        peers = river_peers("classification")
        if len(np.unique(y)) > 2 and peers:
            from river import linear_model
            peers["river LogisticRegression"] = linear_model.SoftmaxRegression()
        ref = [f"{river_score(peers[k], Z, y, 'classification', labels=True):.4f}"
               if k in peers else "-" for k in ("river LogisticRegression", "river KNNClassifier")]
        for label, (make, before, fewer) in learners.items():
            def run(**kw):
                return f"{score(make(**kw), Z, y, 'classification', 1):.4f}"
            accs = [run(gamma=float(g / d)) for g in GRID]
            print(f"| {name} | {label} | {run(gamma=1.0 / d, **before)} | {run()} | "
                  f"{run(**fewer) if fewer else '-'} | " + " | ".join(accs) + " | "
                  + " | ".join(ref) + " |")


def warmup():
    """gamma="scale" on the learners that took it from their first chunk before the warm-up
    (docs/defaults.md, section 2): progressive accuracy on the five streams of `widths`,
    shuffled once and scaled online.  "first chunk" is the previous rule, the width
    ``factor / (d Var)`` of the first chunk given as a number: chunks of 1000 events, and
    one event at a time (a first chunk of one row: the first event, all zeros after online
    scaling, gives factor / d).  "warm-up" is the default now, the same model either way
    (checked here); PairwiseLearner(pair_kernel="difference") shows the ranking error on the
    second half after learning the first, one event at a time, and in one chunk."""
    from okl import PairwiseLearner
    from okl._gamma import LOCAL_FACTOR, scale_gamma
    from okl.evaluation import ranking_error
    sets = classification_sets()
    learners = {
        "RegularizedPAClassifier(gaussian)": (_pa, LOCAL_FACTOR),
        "RegularizedPAClassifier(fourier, D=200)": (
            lambda **kw: _pa(**dict(dict(approximation="fourier", n_components=200,
                                         random_state=0), **kw)), LOCAL_FACTOR),
        "RegularizedPAClassifier(nystroem, D=100)": (
            lambda **kw: _pa(approximation="nystroem", n_components=100, **kw), LOCAL_FACTOR),
        "CoefficientRegularizedClassifier": (CoefficientRegularizedClassifier, LOCAL_FACTOR),
        "OnlineKernelClassifier(fourier, D=200)": (
            lambda **kw: OnlineKernelClassifier(**dict(dict(
                approximation="fourier", n_components=200, random_state=0), **kw)), 1.0),
        "OnlineKernelClassifier(nystroem, D=100)": (
            lambda **kw: OnlineKernelClassifier(approximation="nystroem", n_components=100,
                                                **kw), 1.0),
    }
    print("| stream | estimator | first chunk, chunks of 1000 | first chunk, one event "
          "| warm-up (either) |")
    print("|---|---|---|---|---|")
    for name, (X, y) in sets.items():
        Z, y = online_scaled(X, y)
        for label, (make, factor) in learners.items():
            chunk = score(make(gamma=scale_gamma(Z[:1000], factor=factor)), Z, y,
                          "classification", 1000)
            one = score(make(gamma=scale_gamma(Z[:1], factor=factor)), Z, y,
                        "classification", 1)
            warm = score(make(), Z, y, "classification", 1000)
            warm_one = score(make(), Z, y, "classification", 1)
            assert warm == warm_one, (name, label, warm, warm_one)
            print(f"| {name} | {label} | {chunk:.4f} | {one:.4f} | {warm:.4f} |")

    def ranked(Z, y, half, gamma, one):
        est = PairwiseLearner(pair_kernel="difference", buffer=200, random_state=0,
                              gamma=gamma)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if one:
                for i in range(half):
                    est.partial_fit(Z[i:i + 1], y[i:i + 1])
            else:
                est.partial_fit(Z[:half], y[:half])
        return ranking_error(est, Z[half:], y[half:])

    # random features vary with their draw: the mean over five seeds, chunks of 1000
    print("\n| stream | estimator, mean of random_state 0-4 | first chunk | warm-up |")
    print("|---|---|---|---|")
    fourier = {label: make for label, make in learners.items() if "fourier" in label}
    for name, (X, y) in sets.items():
        Z, y = online_scaled(X, y)
        for label, (make, factor) in fourier.items():
            gamma = scale_gamma(Z[:1000], factor=factor)
            first, warm = (np.mean([score(make(gamma=g, random_state=seed), Z, y,
                                          "classification", 1000) for seed in range(5)])
                           for g in (gamma, "scale"))
            print(f"| {name} | {label} | {first:.4f} | {warm:.4f} |")

    # a raw stream: breast cancer at scale 1000, its first event of equal entries; 300 events
    # learned one at a time, accuracy on the other 269
    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    X = 1000.0 * (X[order] - X.mean(axis=0)) / X.std(axis=0)
    y = y[order]
    X[0] = X[0].mean()
    print("\n| raw breast cancer x 1000, one event at a time | first chunk (its first event) "
          "| warm-up |")
    print("|---|---|---|")
    for label, (make, factor) in learners.items():
        accs = []
        for gamma in (scale_gamma(X[:1], factor=factor), "scale"):
            est = make(gamma=gamma, classes=[0, 1])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for i in range(300):
                    est.learn_one(X[i], y[i])
            accs.append(float(np.mean(est.predict(X[300:]) == y[300:])))
        print(f"| {label} | {accs[0]:.4f} | {accs[1]:.4f} |")

    print("\n| stream (ranking error, second half) | first chunk, one chunk | first chunk, "
          "one event | warm-up, one chunk | warm-up, one event |")
    print("|---|---|---|---|---|")
    for name, (Z, y, _) in streams().items():
        half = len(Z) // 2
        print(f"| {name} | {ranked(Z, y, half, scale_gamma(Z[:half]), False):.4f} | "
              f"{ranked(Z, y, half, scale_gamma(Z[:1]), True):.4f} | "
              f"{ranked(Z, y, half, 'scale', False):.4f} | "
              f"{ranked(Z, y, half, 'scale', True):.4f} |")


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


def shifted_prior_stream(n=3000, d=5, rates=(0.5, 0.9, 0.2), seed=0):
    """A generated stream whose positive rate goes through `rates` (equal parts of the stream);
    the classes differ in the mean of x_1 and in the sign of x_2 x_3."""
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n) < np.repeat(rates, n // len(rates))).astype(int)
    X = rng.normal(size=(n, d))
    X[:, 0] += np.where(y == 1, 0.75, -0.75)
    X[:, 1] += np.where(y == 1, 0.5, -0.5) * np.sign(X[:, 2])
    return X, y


def _mean(st, key, value, rate):
    st[key] = st.get(key, 0.0) + (value - st.get(key, 0.0)) * rate
    return st[key]


def prior_shift(st, t, y, h, k=3.0, rate=0.01):
    """The label prior's recent shift, soft-thresholded at k noise levels, in the units of the
    kernel part: (mean of the recent labels - mean of all labels), less k times the standard
    deviation of the recent mean on a stationary stream, times the mean |h| so far."""
    recent = _mean(st, "recent", y, max(1.0 / t, rate))
    prior = _mean(st, "y", y, 1.0 / t)
    noise = k * np.sqrt(rate / (2.0 - rate) * max(1.0 - prior * prior, 0.0))
    shift = recent - prior
    return np.sign(shift) * max(abs(shift) - noise, 0.0) * _mean(st, "h", abs(h), 1.0 / t)


def lag_capped_shift(st, t, y, h, k=3.0, rate=0.01):
    """`prior_shift` capped by the kernel part's lag: the recent labels' mean less the
    recent mean of sign h (the labels the kernel part predicted), where it has the shift's
    sign, else 0 (okl's fit_intercept="prior", docs/defaults.md, section 1)."""
    recent = _mean(st, "recent", y, max(1.0 / t, rate))
    prior = _mean(st, "y", y, 1.0 / t)
    signs = _mean(st, "signs", 1.0 if h > 0 else -1.0, max(1.0 / t, rate))
    noise = k * np.sqrt(rate / (2.0 - rate) * max(1.0 - prior * prior, 0.0))
    shift = recent - prior
    lag = np.sign(shift) * (recent - signs)
    return np.sign(shift) * max(min(abs(shift) - noise, lag), 0.0) * _mean(st, "h", abs(h), 1.0 / t)


#: Offsets for the hinge classifier, as (b_{t+1}, the value the kernel part's gradient is
#: taken at) from the state st, step t, label y in {-1, 1}, kernel part h = h_t(x_t) and b_t.
#: "step" designs move b by -rate eta_t g after the kernel part's gradient g.
OFFSET_DESIGNS = {
    "none": None,
    "NORMA's step (fit_intercept=True)": ("step", 1.0),
    "step 0.01 eta_t (river's intercept_lr)": ("step", 0.01),
    "label mean (as the regressor's MEAN)": lambda st, t, y, h, b: (
        (m := _mean(st, "y", y, 1.0 / t)), h + m),
    "label mean, forgetting at rate 0.01": lambda st, t, y, h, b: (
        (m := _mean(st, "y", y, max(1.0 / t, 0.01))), h + m),
    "label mean times the mean abs(h)": lambda st, t, y, h, b: (
        (m := _mean(st, "y", y, 1.0 / t) * _mean(st, "h", abs(h), 1.0 / t)), h + m),
    "0.1 label mean, decision only": lambda st, t, y, h, b: (
        0.1 * _mean(st, "y", y, 1.0 / t), h),
    "prior shift (prior_shift)": lambda st, t, y, h, b: (
        (m := prior_shift(st, t, y, h)), h + m),
    "prior shift, decision only": lambda st, t, y, h, b: (prior_shift(st, t, y, h), h),
    "prior shift capped by the lag, decision only": lambda st, t, y, h, b: (
        lag_capped_shift(st, t, y, h), h),
}


def offset_run(Z, y, gamma, design, lam=1e-3):
    """Progressive accuracy of the hinge classifier with an offset design: the papers' step
    (eta="auto", Gaussian kernel, no budget) written out, so that design None gives exactly
    OnlineKernelClassifier(fit_intercept=False)'s iterates (the bench prints both)."""
    labels = np.where(np.asarray(y) > 0, 1.0, -1.0)
    centres, coef = np.empty_like(Z), np.empty(len(Z))
    m, b, st, hits = 0, 0.0, {}, 0
    for t, (x, yt) in enumerate(zip(Z, labels), 1):
        h = float(coef[:m] @ np.exp(-gamma * ((centres[:m] - x) ** 2).sum(axis=1)))
        hits += (h + b > 0) == (yt > 0)
        eta = t ** -0.5 / (lam + 1.0)
        if design is None or isinstance(design, tuple):
            b_next, v = b, h + b
        else:
            b_next, v = design(st, t, yt, h, b)
        g = -yt if yt * v <= 1.0 else 0.0
        coef[:m] *= 1.0 - lam * eta
        if g:
            centres[m], coef[m] = x, -eta * g
            m += 1
        if isinstance(design, tuple):
            b_next = b - design[1] * eta * g
        b = b_next
    return hits / len(Z)


def intercept():
    """The classifier's offset designs on the issue's streams (batch-standardised inputs,
    lam = 1e-3, no budget, the papers' step eta="auto") and on a stream whose label prior
    shifts; the offsets under either step on the shifted streams; then the regressor's."""
    from sklearn.preprocessing import StandardScaler
    digits = load_digits(return_X_y=True)
    cases = [("digits 0-4 vs 5-9", digits[0], digits[1] >= 5, 0.1),
             ("digits 0-4 vs 5-9", digits[0], digits[1] >= 5, 0.03),
             ("breast cancer", *load_breast_cancer(return_X_y=True), 0.1),
             ("digits 0 vs rest (10% positive)", digits[0], digits[1] == 0, 0.1),
             ("prior 0.5 -> 0.9 -> 0.2 (generated, d = 5)", *shifted_prior_stream(), 0.2),
             ("prior 0.5 -> 0.9 -> 0.2 (generated, d = 5)", *shifted_prior_stream(), 1.0),
             ("prior 0.1 -> 0.5 -> 0.9 (generated, d = 5)",
              *shifted_prior_stream(rates=(0.1, 0.5, 0.9), seed=1), 0.2)]
    print("| stream | gamma | OnlineKernelClassifier(fit_intercept=False) | default "
          "(fit_intercept='prior') | " + " | ".join(OFFSET_DESIGNS) + " |")
    print("|---|---|---|---|" + "---|" * len(OFFSET_DESIGNS))
    for name, X, y, gamma in cases:
        order = (np.random.default_rng(0).permutation(len(X)) if "generated" not in name
                 else np.arange(len(X)))                    # the prior's shift is its order
        X, y = StandardScaler().fit_transform(X[order]), np.asarray(y)[order].astype(int)
        library = [score(OnlineKernelClassifier(gamma=gamma, budget=None, eta="auto", **kw), X,
                         y, "classification") for kw in (dict(fit_intercept=False), {})]
        accs = [offset_run(X, y, gamma, design) for design in OFFSET_DESIGNS.values()]
        print(f"| {name} | {gamma} | " + " | ".join(f"{a:.4f}" for a in library + accs) + " |")
    print("\nThe shifted streams, the offsets under each step (inputs standardised in batch, "
          "lam = 1e-3, budget=None):\n")
    print("| stream | gamma | eta='auto', fit_intercept=False | eta='auto', 'prior' | eta='auto', "
          "True | eta='scaled', False | eta='scaled', 'prior' (default) | eta='scaled', True |")
    print("|---|---|---|---|---|---|---|---|")
    for name, X, y, gamma in cases[4:]:
        X, y = StandardScaler().fit_transform(X), np.asarray(y).astype(int)
        accs = [score(OnlineKernelClassifier(gamma=gamma, budget=None, eta=eta, fit_intercept=fit),
                      X, y, "classification")
                for eta in ("auto", "scaled") for fit in (False, "prior", True)]
        print(f"| {name} | {gamma} | " + " | ".join(f"{a:.4f}" for a in accs) + " |")
    print("\nThe default offset under either step, against fit_intercept=False and the "
          "previous rule (the prior's shift without the lag cap, `prior_shift` on the same "
          "kernel part, decision only):\n")
    offset_steps()
    Z, y = online_scaled(*shifted_prior_stream(), shuffle=False)
    print("\nThe generated stream scaled online, the library's defaults: progressive accuracy "
          + ", ".join(f"{label} {score(make(), Z, y, 'classification'):.4f}" for label, make in (
              ("OnlineKernelClassifier()", OnlineKernelClassifier),
              ("fit_intercept=False", lambda: OnlineKernelClassifier(fit_intercept=False)),
              ("fit_intercept=True", lambda: OnlineKernelClassifier(fit_intercept=True)),
              ("loss='logistic'", lambda: OnlineKernelClassifier(loss="logistic")),
              ("loss='logistic', fit_intercept=False",
               lambda: OnlineKernelClassifier(loss="logistic", fit_intercept=False)),
              ("loss='logistic', fit_intercept=True",
               lambda: OnlineKernelClassifier(loss="logistic", fit_intercept=True)))))
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


def offset_streams():
    """(setting, stream, gamma, Z, y) of `offset_steps`: five stationary streams (shuffled
    once) and five whose label prior shifts (in order), standardised in batch for the
    issue's setting (lam = 1e-3, no budget, gamma given), scaled online for the defaults."""
    from sklearn.datasets import load_wine, make_classification
    from sklearn.preprocessing import StandardScaler
    digits, wine = load_digits(return_X_y=True), load_wine(return_X_y=True)
    stationary = [("digits 0-4 vs 5-9", digits[0], digits[1] >= 5),
                  ("breast cancer", *load_breast_cancer(return_X_y=True)),
                  ("digits 0 vs rest", digits[0], digits[1] == 0),
                  ("wine class 1 vs rest", wine[0], wine[1] == 1),
                  ("make_classification (2000, 10 features, seed 0)",
                   *make_classification(n_samples=2000, n_features=10, n_informative=5,
                                        random_state=0))]
    shifted = [(f"prior {' -> '.join(map(str, rates))} (generated, seed {seed})",
                *shifted_prior_stream(n=n, rates=rates, seed=seed))
               for n, rates, seed in ((3000, (0.5, 0.9, 0.2), 0), (3000, (0.1, 0.5, 0.9), 1),
                                      (3000, (0.9, 0.1), 2), (3000, (0.3, 0.8), 3),
                                      (4000, (0.5, 0.1, 0.6, 0.9), 4))]
    for name, X, y in stationary + shifted:
        y = np.asarray(y).astype(int)
        order = (np.arange(len(X)) if "generated" in name
                 else np.random.default_rng(0).permutation(len(X)))
        Z = StandardScaler().fit_transform(X[order])
        for gamma in ((0.2,) if "generated" in name else (0.1, 0.03)):
            yield "issue's", name, gamma, Z, y[order]
        yield "defaults", name, None, *online_scaled(X, y, shuffle="generated" not in name)


def decision_only(h, y, design):
    """Progressive accuracy of the kernel part's predictions h plus a decision-only offset
    design (b_{t+1} from the state after event t, b_1 = 0)."""
    labels = np.where(np.asarray(y) > 0, 1.0, -1.0)
    st, b, hits = {}, 0.0, 0
    for t, (ht, yt) in enumerate(zip(h, labels), 1):
        hits += (ht + b > 0) == (yt > 0)
        b = design(st, t, yt, ht)
    return hits / len(h)


def offset_steps():
    """The default offset (fit_intercept="prior") under either step, beside
    fit_intercept=False and the previous rule: the kernel part steps without the offset, so
    the previous rule is `prior_shift` added to fit_intercept=False's progressive
    predictions (`decision_only`; the library's own rule, `lag_capped_shift`, is checked
    the same way)."""
    print("| setting | stream | gamma | eta='auto': False | previous rule | 'prior' | "
          "eta='scaled' (default): False | previous rule | 'prior' (default) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for setting, name, gamma, Z, y in offset_streams():
        kw = dict(gamma=gamma, lam=1e-3, budget=None) if gamma else {}
        row = []
        for eta in ("auto", "scaled"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                h = np.asarray(progressive_validation(
                    OnlineKernelClassifier(eta=eta, fit_intercept=False, **kw), Z, y,
                    chunk_size=1000).scores)
            library = score(OnlineKernelClassifier(eta=eta, **kw), Z, y, "classification")
            if abs(decision_only(h, y, lag_capped_shift) - library) > 0.5 / len(y):
                raise AssertionError(f"{name}: lag_capped_shift is not the library's rule")
            row += [decision_only(h, y, lambda *a: 0.0), decision_only(h, y, prior_shift),
                    library]
        print(f"| {setting} | {name} | {gamma or 'scale'} | "
              + " | ".join(f"{a:.4f}" for a in row) + " |", flush=True)


def step():
    """The default step against eta="auto" (docs/defaults.md, section 4).

    Regressors: eta="scaled" (the default) against the papers' eta="auto" on diabetes and
    on the README's demo stream (okl._demo, 578 events, gamma = 2 as the demo; pinball loss of
    the progressive predictions).  Then the hinge classifier's (`hinge_step`).
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
    print()
    hinge_step()


def hinge_streams():
    """The classifier step's streams: scikit-learn's bundled sets (binary splits and their
    classes) and generated ones, each shuffled once (seed `seed`) and scaled online."""
    from sklearn.datasets import (load_iris, load_wine, make_circles, make_classification,
                                  make_gaussian_quantiles, make_moons)
    (dX, dy), (wX, wy), (iX, iy) = (load_digits(return_X_y=True), load_wine(return_X_y=True),
                                    load_iris(return_X_y=True))
    m38 = (dy == 3) | (dy == 8)
    return {
        "digits 0-4 vs 5-9": (dX, (dy >= 5).astype(int)),
        "digits odd vs even": (dX, dy % 2),
        "digits 3 vs 8": (dX[m38], (dy[m38] == 8).astype(int)),
        "breast cancer": load_breast_cancer(return_X_y=True),
        "wine 0 vs rest": (wX, (wy == 0).astype(int)),
        "wine 1 vs rest": (wX, (wy == 1).astype(int)),
        "iris 1 vs rest": (iX, (iy == 1).astype(int)),
        "iris 2 vs rest": (iX, (iy == 2).astype(int)),
        "make_classification d=20": make_classification(2000, 20, n_informative=5,
                                                        random_state=0),
        "make_classification d=10, 3 clusters, 5% flipped": make_classification(
            2000, 10, n_informative=6, n_clusters_per_class=3, flip_y=0.05, class_sep=0.8,
            random_state=1),
        "make_moons noise 0.3": make_moons(1000, noise=0.3, random_state=0),
        "make_circles noise 0.1": make_circles(1000, noise=0.1, factor=0.5, random_state=0),
        "make_gaussian_quantiles d=8": make_gaussian_quantiles(n_samples=2000, n_features=8,
                                                               n_classes=2, random_state=0),
        "digits (10 classes)": (dX, dy),
        "wine (3 classes)": (wX, wy),
        "iris (3 classes)": (iX, iy),
        "make_gaussian_quantiles d=8 (3 classes)": make_gaussian_quantiles(
            n_samples=2000, n_features=8, random_state=0),
    }


def _shuffled_scaled(X, y, seed):
    order = np.random.default_rng(seed).permutation(len(X))
    return online_scaled(np.asarray(X, dtype=np.float64)[order], np.asarray(y)[order],
                         shuffle=False)


def hinge_diagnosis():
    """Why eta="auto" was weak on digits 0-4 vs 5-9: the previous defaults (eta="auto"), one
    setting changed at a time; the centres kept without a budget and the median |f|."""
    Z, y, _ = streams()["digits"]
    d = Z.shape[1]
    changes = {"eta='auto' (before)": {}, "fit_intercept=False": dict(fit_intercept=False),
               "budget=None": dict(budget=None), "budget_policy='oldest'":
               dict(budget_policy="oldest"), "lam=0": dict(lam=0.0), "lam=1e-4": dict(lam=1e-4),
               "lam=1e-2": dict(lam=1e-2), "lam=1e-1": dict(lam=0.1)}
    changes.update({f"{c} x the step": dict(eta=lambda t, c=c: c * t ** -0.5 / (1 + 1e-3))
                    for c in (2, 4, 8, 16)})
    changes["eta_decay=0.25"] = dict(eta_decay=0.25)
    changes.update({f"gamma={g}/d": dict(gamma=g / d) for g in (0.5, 2, 4, 16, 32)})
    changes["eta='scaled' (default)"] = dict(eta="scaled")
    print("| digits 0-4 vs 5-9, from eta='auto' | progressive accuracy | centres (budget=None) "
          "of 1797 | median abs(f) |")
    print("|---|---|---|---|")
    for label, kw in changes.items():
        kw = dict(dict(eta="auto"), **kw)
        acc = score(OnlineKernelClassifier(**kw), Z, y, "classification")
        full = OnlineKernelClassifier(**dict(kw, budget=None))
        score(full, Z, y, "classification")
        print(f"| {label} | {acc:.4f} | {full.n_support_} | "
              f"{np.median(np.abs(full.decision_function(Z))):.3f} |", flush=True)


APPROXIMATIONS = {"Nystroem D=50": dict(approximation="nystroem", n_components=50),
                  "Nystroem D=100": dict(approximation="nystroem", n_components=100),
                  "Nystroem D=200": dict(approximation="nystroem", n_components=200),
                  "Fourier D=200": dict(approximation="fourier", n_components=200)}


def hinge_approximations(seeds=5, raw_seeds=10):
    """The hinge step on Nystroem and random Fourier features (docs/defaults.md, section 4):
    the papers' eta="auto" against the default eta="scaled" (kbar of the first 100 rows
    learned), the mean over `seeds` shuffles (Fourier's draw follows the seed) of every
    classifier stream, with the smallest difference of the shuffles, and river's untuned peers
    on the same events (their mean over the same shuffles); the streams of k >= 3 classes
    learn a weight matrix (MultiFeatureEvents).  Then six raw streams (not scaled,
    `raw_seeds` shuffles: their differences are a few events of wine's 178) and kbar of the
    rows beside that of the centres (`rows_and_centres`)."""
    from river import linear_model, neighbors
    raw = hinge_streams()
    print(f"| stream, mean of {seeds} shuffles: eta='auto' / 'scaled' (smallest difference) | "
          + " | ".join(APPROXIMATIONS) + " | kernel_mean_ | river LogisticRegression "
          "(Softmax, k >= 3) | river PAClassifier | river KNNClassifier |")
    print("|---" * (len(APPROXIMATIONS) + 5) + "|")
    for name, (X, y) in raw.items():
        runs = {label: [] for label in APPROXIMATIONS}
        kbars, river = [], []
        multi = len(np.unique(y)) > 2
        for seed in range(seeds):
            Z, ys = _shuffled_scaled(X, y, seed)
            for label, kw in APPROXIMATIONS.items():
                kw = dict(kw, random_state=seed) if kw["approximation"] == "fourier" else kw
                scaled = OnlineKernelClassifier(**kw)
                runs[label].append([score(OnlineKernelClassifier(eta="auto", **kw), Z, ys,
                                          "classification"),
                                    score(scaled, Z, ys, "classification")])
                kbars.append(scaled.kernel_mean_)
            models = [linear_model.SoftmaxRegression() if multi
                      else linear_model.LogisticRegression(),
                      None if multi else linear_model.PAClassifier(),
                      neighbors.KNNClassifier()]
            river.append([np.nan if m is None else
                          river_score(m, Z, ys, "classification", labels=multi)
                          for m in models])
        cells = []
        for label in APPROXIMATIONS:
            a, b = np.array(runs[label]).T
            cells.append(f"{a.mean():.4f} / {b.mean():.4f} ({(b - a).min():+.4f})")
        cells.append(f"{np.mean(kbars):.3f}")
        cells += ["-" if np.isnan(r) else f"{r:.4f}" for r in np.mean(river, axis=0)]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n| raw stream (not scaled), mean of {raw_seeds} shuffles: eta='auto' / 'scaled' "
          "(smallest difference) | " + " | ".join(APPROXIMATIONS) + " |")
    print("|---" * (len(APPROXIMATIONS) + 1) + "|")
    for name in ("digits 0-4 vs 5-9", "breast cancer", "wine 0 vs rest", "wine 1 vs rest",
                 "wine (3 classes)", "iris (3 classes)"):
        X, y = raw[name]
        runs = {label: [] for label in APPROXIMATIONS}
        for seed in range(raw_seeds):
            order = np.random.default_rng(seed).permutation(len(X))
            Xs, ys = np.asarray(X, dtype=np.float64)[order], np.asarray(y)[order]
            for label, kw in APPROXIMATIONS.items():
                kw = dict(kw, random_state=seed) if kw["approximation"] == "fourier" else kw
                runs[label].append([score(OnlineKernelClassifier(eta=eta, **kw), Xs, ys,
                                          "classification") for eta in ("auto", "scaled")])
        cells = []
        for label in APPROXIMATIONS:
            a, b = np.array(runs[label]).T
            cells.append(f"{a.mean():.4f} / {b.mean():.4f} ({(b - a).min():+.4f})")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    rows_and_centres(raw)


class _CentresKbar(OnlineKernelClassifier):
    """eta="scaled" on Nystroem features with kbar of the centres during the exact phase (the
    exact learner's rule) and of the rows after it: the variant `rows_and_centres` measures."""

    def _measure_kernel_mean(self):
        model = self.__dict__.get("_expansion")
        if getattr(model, "linear", True) is not None:
            return super()._measure_kernel_mean()
        centres = model.expansion.centers_
        m = len(centres)
        if m < 2:
            return 1.0
        K = kernel_matrix(centres, kernel=self.kernel, gamma=self._kernel_gamma())
        return float((0.5 * (K.sum() - np.trace(K)) + 1.0) / (m * (m - 1) / 2.0 + 1.0))


def rows_and_centres(raw, seeds=5):
    """kbar of the first 100 rows (eta="scaled" on features) beside kbar of the centres the
    same steps kept (Nystroem D=200's exact phase, and the exact learner without a budget),
    shuffle seed 0: the two rules differ only by the rows no step kept.  Then the accuracy of
    Nystroem features with kbar of the rows (the default) and of the centres during the exact
    phase (`_CentresKbar`), the mean over `seeds` shuffles."""
    print(f"\n| stream | kbar, 100 rows (features), shuffle 0 | kbar, Nystroem's centres at "
          "step 100 (their number) | kernel_mean_ of the exact learner, budget=None | accuracy, "
          f"mean of {seeds} shuffles: kbar of the rows / of the centres, Nystroem D=100 | "
          "the same, D=200 |")
    print("|---|---|---|---|---|---|")
    for name, (X, y) in raw.items():
        Z, ys = _shuffled_scaled(X, y, 0)
        nys = OnlineKernelClassifier(approximation="nystroem", n_components=200,
                                     classes=np.unique(ys)).partial_fit(Z[:100], ys[:100])
        exact = OnlineKernelClassifier(budget=None, classes=np.unique(ys)).partial_fit(
            Z[:100], ys[:100])
        centres = nys._expansion.expansion.centers_
        K = kernel_matrix(centres, kernel="gaussian", gamma=nys.gamma_)
        m = len(centres)
        kbar = (0.5 * (K.sum() - np.trace(K)) + 1.0) / (m * (m - 1) / 2.0 + 1.0)
        cells = [f"{nys.kernel_mean_:.4f}", f"{kbar:.4f} ({m})", f"{exact.kernel_mean_:.4f}"]
        for D in (100, 200):
            runs = []
            for seed in range(seeds):
                Z, ys = _shuffled_scaled(X, y, seed)
                runs.append([score(cls(approximation="nystroem", n_components=D), Z, ys,
                                   "classification")
                             for cls in (OnlineKernelClassifier, _CentresKbar)])
            a, b = np.array(runs).T
            cells.append(f"{a.mean():.4f} / {b.mean():.4f}")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def approx_cost(repeats=5):
    """us per event of the hinge classifier on features learned one event at a time (digits
    0-4 vs 5-9, standardised, d = 64): the first 100 events (eta="scaled" measures kbar on
    the one-row path) and events 101-1100, eta="auto" and "scaled", the best of `repeats`;
    run it under the bench lock."""
    X, y = load_digits(return_X_y=True)
    X = (X - X.mean(0)) / (X.std(0) + 1e-9)
    y = (y >= 5).astype(int)
    print("| features | gamma | eta | us per event, events 1-100 | events 101-1100 | "
          "Nystroem's switch at event |")
    print("|---|---|---|---|---|---|")
    for label, kw in (("Nystroem D=100", dict(approximation="nystroem", n_components=100)),
                      ("Fourier D=200", dict(approximation="fourier", n_components=200,
                                             random_state=0))):
        for gamma in ("scale", 1 / 64):
            for eta in ("auto", "scaled"):
                first, rest, switch = np.inf, np.inf, "-"
                for _ in range(repeats):
                    est = OnlineKernelClassifier(eta=eta, gamma=gamma, classes=[0, 1], **kw)
                    start = time.perf_counter()
                    for i in range(100):
                        est.learn_one(X[i], int(y[i]))
                    mid = time.perf_counter()
                    for i in range(100, 1100):
                        est.learn_one(X[i], int(y[i]))
                    end = time.perf_counter()
                    first, rest = min(first, (mid - start) / 100), min(rest, (end - mid) / 1000)
                if kw["approximation"] == "nystroem":
                    est = OnlineKernelClassifier(eta=eta, gamma=gamma, classes=[0, 1], **kw)
                    for i in range(1100):
                        est.learn_one(X[i], int(y[i]))
                        if est.n_components_:
                            switch = i + 1
                            break
                g = gamma if isinstance(gamma, str) else "1/64"
                print(f"| {label} | {g} | {eta} | {first * 1e6:.0f} | {rest * 1e6:.1f} | "
                      f"{switch} |", flush=True)


def hinge_step(seeds=10):
    """OnlineKernelClassifier's step (docs/defaults.md, section 4): the default eta="scaled"
    against the papers' eta="auto" on 16 streams (shuffle seed 0), each with its best width in
    hindsight (fit_intercept=False, the grid of `table`), river's untuned peers on the same
    events; then the mean over `seeds` shuffles of both steps, scaled online and raw."""
    from river import linear_model, neighbors
    print("| stream | eta='auto' (before) | eta='scaled' (default) | kernel_mean_ | eta='auto', "
          "best gamma | eta='scaled', best gamma | river LogisticRegression | river PAClassifier "
          "| river KNNClassifier |")
    print("|---|---|---|---|---|---|---|---|---|")
    raw = hinge_streams()
    for name, (X, y) in raw.items():
        Z, y = _shuffled_scaled(X, y, 0)
        d, multi = Z.shape[1], len(np.unique(y)) > 2
        run = lambda **kw: score(OnlineKernelClassifier(**kw), Z, y, "classification")  # noqa
        default = OnlineKernelClassifier()
        accs = [run(eta="auto"), score(default, Z, y, "classification")]
        best = [max(run(eta=eta, gamma=float(g / d), fit_intercept=False) for g in GRID)
                for eta in ("auto", "scaled")]
        peers = [linear_model.SoftmaxRegression() if multi else linear_model.LogisticRegression(),
                 None if multi else linear_model.PAClassifier(), neighbors.KNNClassifier()]
        river = ["-" if m is None else f"{river_score(m, Z, y, 'classification', labels=multi):.4f}"
                 for m in peers]
        print(f"| {name} | {accs[0]:.4f} | {accs[1]:.4f} | {default.kernel_mean_:.3f} | "
              f"{best[0]:.4f} | {best[1]:.4f} | " + " | ".join(river) + " |", flush=True)
    print(f"\n| stream, mean of {seeds} shuffles | eta='auto' | eta='scaled' (default) | "
          "difference (its smallest) |")
    print("|---|---|---|---|")
    for name, (X, y) in raw.items():
        diffs = []
        for seed in range(seeds):
            Z, ys = _shuffled_scaled(X, y, seed)
            diffs.append([score(OnlineKernelClassifier(eta=eta), Z, ys, "classification")
                          for eta in ("auto", "scaled")])
        a, b = np.array(diffs).T
        print(f"| {name} | {a.mean():.4f} | {b.mean():.4f} | {(b - a).mean():+.4f} "
              f"({(b - a).min():+.4f}) |", flush=True)
    print(f"\n| raw stream (not scaled), mean of {seeds} shuffles | eta='auto' | eta='scaled' "
          "(default) | difference (its smallest) |")
    print("|---|---|---|---|")
    for name in ("digits 0-4 vs 5-9", "breast cancer", "wine 0 vs rest", "wine 1 vs rest",
                 "wine (3 classes)", "iris (3 classes)"):
        X, y = raw[name]
        diffs = []
        for seed in range(seeds):
            order = np.random.default_rng(seed).permutation(len(X))
            Xs, ys = np.asarray(X, dtype=np.float64)[order], np.asarray(y)[order]
            diffs.append([score(OnlineKernelClassifier(eta=eta), Xs, ys, "classification")
                          for eta in ("auto", "scaled")])
        a, b = np.array(diffs).T
        print(f"| {name} | {a.mean():.4f} | {b.mean():.4f} | {(b - a).mean():+.4f} "
              f"({(b - a).min():+.4f}) |", flush=True)

def untuned():
    """The kernel learners with their defaults (and the feature models, the paper's PA) beside
    river's untuned peers, in one run: progressive accuracy on the five classification
    streams, RMSE on diabetes, each shuffled once and scaled online."""
    from river import linear_model, multiclass, neighbors
    data = {name: online_scaled(X, y) for name, (X, y) in classification_sets().items()}
    learners = {
        "OnlineKernelClassifier()": OnlineKernelClassifier,
        "OnlineKernelClassifier(fourier)": lambda: OnlineKernelClassifier(
            approximation="fourier", n_components=200, random_state=0),
        "OnlineKernelClassifier(nystroem)": lambda: OnlineKernelClassifier(
            approximation="nystroem"),
        "CoefficientRegularizedClassifier()": CoefficientRegularizedClassifier,
        "RegularizedPAClassifier()": RegularizedPAClassifier,
        "RegularizedPAClassifier(variant='PA')": lambda: RegularizedPAClassifier(variant="PA"),
        "RegularizedPAClassifier(kernel='gaussian')": lambda: RegularizedPAClassifier(
            kernel="gaussian"),
    }

    def peers(k):
        return {"river LogisticRegression": linear_model.LogisticRegression() if k == 2
                else linear_model.SoftmaxRegression(),
                "river PAClassifier": linear_model.PAClassifier() if k == 2
                else multiclass.OneVsRestClassifier(linear_model.PAClassifier()),
                "river KNNClassifier": neighbors.KNNClassifier()}
    names = list(data)
    scores = {}
    for name, (Z, y) in data.items():
        for label, make in learners.items():
            scores[label, name] = score(make(), Z, y, "classification")
        for label, model in peers(len(np.unique(y))).items():
            scores[label, name] = river_score(model, Z, y, "classification", labels=True)
    print("| learner (progressive accuracy) | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for label in list(learners) + list(peers(2)):
        print(f"| {label} | " + " | ".join(f"{scores[label, n]:.4f}" for n in names) + " |")
    Z, y, _ = streams()["diabetes"]
    print("\n| learner | diabetes (RMSE) |\n|---|---|")
    for label, make in {"OnlineKernelRegressor()": OnlineKernelRegressor,
                        "OnlineKernelRegressor(fourier)": lambda: OnlineKernelRegressor(
                            approximation="fourier", n_components=200, random_state=0),
                        "OnlineKernelRegressor(nystroem)": lambda: OnlineKernelRegressor(
                            approximation="nystroem")}.items():
        print(f"| {label} | {score(make(), Z, y, 'regression'):.4f} |")
    for label, model in river_peers("regression").items():
        print(f"| {label} | {river_score(model, Z, y, 'regression'):.4f} |")


if __name__ == "__main__":
    {"table": table, "untuned": untuned, "widths": widths, "warmup": warmup, "cost": cost,
     "intercept": intercept, "offset_steps": offset_steps,
     "step": step, "hinge": hinge_step, "diagnosis": hinge_diagnosis,
     "approx": hinge_approximations, "approxcost": approx_cost}[
        sys.argv[1] if len(sys.argv) > 1 else "table"]()
