"""Conformal intervals measured (docs/conformal.md): coverage, width, windows, cost.

    python bench/conformal.py table      # every method and score on five streams, beside
                                         # okl's pinball pair and river's jackknife interval
    python bench/conformal.py widths     # OnlineKernelRegressor()'s width beside the narrowest
                                         # constant band on its residuals (hindsight)
    python bench/conformal.py steps      # AgACI's step grid and window, untuned
    python bench/conformal.py pid        # conformal PID's integrator gains beside quantile
                                         # tracking (its proportional part alone)
    python bench/conformal.py cost [n]   # us per event over the base learner, one
                                         # event at a time (predict_interval_one + learn_one;
                                         # the classifier's predict_set_one + learn_one)
    python bench/conformal.py sets       # ConformalClassifier on scikit-learn's digits, wine,
                                         # breast cancer, iris (shuffled, standardised)

Streams (generated here, or scikit-learn's bundled diabetes; never river's): 10,000 events of
2 features uniform on [-3, 3]^2 unless said,
- "stationary": y = sin(x0) + cos(x1) / 2 + N(0, 0.3^2);
- "heteroscedastic": the same mean, noise sd 0.05 + 0.3 |x0|;
- "drifting": five phases of 2,000 events, each with its own amplitude, phase shift and
  noise sd (0.1 to 1), the change abrupt;
- "heavy": the stationary mean, Student-t noise with 3 degrees of freedom, scale 0.3;
- "diabetes": scikit-learn's diabetes (442 events, 10 features), shuffled (seed 0), repeated
  5 times with fresh noise N(0, 5^2) added to the target each time, features standardised.
The synthetic streams know their conditional quantiles: "oracle" is the mean width of the
narrowest band that holds 1 - alpha of y | x (the central interval of a symmetric noise), and
"ratio" a method's mean width over it.  Coverage over windows: the lowest coverage of the
500-event windows that start after event 500 (every 100 events).  The wrapper's default learner,
KernelRLSRegressor(), is the row "okl agaci, default: KernelRLSRegressor()"; every other okl row
and river's RegressionJackknife (through okl.river.to_river) wrap OnlineKernelRegressor(); each
run is one progressive pass (predict, then learn).
"""
import copy
import os
import sys
import time

import numpy as np
from scipy import stats
from sklearn.datasets import load_diabetes

from okl import (
    ConformalRegressor, KernelRLSRegressor, MultiKernelRegressor, OnlineKernelRegressor,
)
from okl._core._conformal import Calibration
from okl.conformal import AUTO_GAMMA, METHODS
from okl.evaluation import progressive_validation

ALPHA = 0.1
N = 10_000


def _mean(X):
    return np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1])


def make_stream(name, seed=0):
    """(X, y, oracle half-widths or None)."""
    rng = np.random.default_rng(seed)
    z = stats.norm.ppf(1 - ALPHA / 2)
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        order = np.random.default_rng(0).permutation(len(y))
        X = (X - X.mean(0)) / X.std(0)
        X, y = np.tile(X[order], (5, 1)), np.tile(y[order], 5)
        return X, y + 5.0 * rng.normal(size=len(y)), None
    X = rng.uniform(-3, 3, (N, 2))
    if name == "stationary":
        sd = np.full(N, 0.3)
    elif name == "heteroscedastic":
        sd = 0.05 + 0.3 * np.abs(X[:, 0])
    elif name == "heavy":
        t = stats.t.ppf(1 - ALPHA / 2, 3)
        return X, _mean(X) + 0.3 * rng.standard_t(3, N), np.full(N, 0.3 * t)
    elif name == "drifting":
        phase = np.arange(N) // 2000
        amp, shift, sd = (np.array(v)[phase] for v in (
            [1.0, 2.0, 0.5, 1.5, 1.0], [0.0, 1.5, -1.0, 3.0, 0.5], [0.3, 0.1, 1.0, 0.5, 0.2]))
        y = amp * np.sin(X[:, 0] + shift) + 0.5 * np.cos(X[:, 1]) + sd * rng.normal(size=N)
        return X, y, z * sd
    return X, _mean(X) + sd * rng.normal(size=N), z * sd


def summary(y, lower, upper, oracle):
    covered = (y >= lower) & (y <= upper)
    width = upper - lower
    finite = np.isfinite(width)
    c = np.concatenate([[0], np.cumsum(covered)])
    starts = np.arange(500, len(y) - 499, 100)
    windows = (c[starts + 500] - c[starts]) / 500
    row = {"coverage": covered.mean(), "width": width[finite].mean(),
           "min window": windows.min() if len(windows) else np.nan}
    row["ratio"] = row["width"] / (2 * oracle.mean()) if oracle is not None else np.nan
    return row


def run_okl(X, y, **params):
    result = progressive_validation(ConformalRegressor(OnlineKernelRegressor(), alpha=ALPHA,
                                                       **params), X, y)
    return result.lower, result.upper


def run_default(X, y):
    """The default wrapper, on KernelRLSRegressor(): scores normalised by its predictive std."""
    result = progressive_validation(ConformalRegressor(alpha=ALPHA), X, y)
    return result.lower, result.upper


def run_pinball_pair(X, y):
    bands = []
    for q in (ALPHA / 2, 1 - ALPHA / 2):
        est = OnlineKernelRegressor(loss="pinball", quantile=q)
        bands.append(est._progressive_scores(X, y, reset=True))
    return np.minimum(*bands), np.maximum(*bands)


def run_river(X, y, window=None):
    from river import conf
    from okl.river import to_river
    model = conf.RegressionJackknife(to_river(OnlineKernelRegressor()), confidence_level=1 - ALPHA,
                                     window_size=window)
    lower, upper = np.empty(len(y)), np.empty(len(y))
    for i, (x, t) in enumerate(zip(X, y)):
        event = dict(enumerate(x.tolist()))
        interval = model.predict_one(event, with_interval=True)
        lower[i], upper[i] = interval.lower, interval.upper
        model.learn_one(event, float(t))
    return lower, upper


RUNS = {
    "okl agaci, OnlineKernelRegressor()": lambda X, y: run_okl(X, y),
    "okl aci": lambda X, y: run_okl(X, y, method="aci"),
    "okl quantile": lambda X, y: run_okl(X, y, method="quantile"),
    "okl pid": lambda X, y: run_okl(X, y, method="pid"),
    "okl agaci, pinball pair (CQR)": lambda X, y: run_okl(X, y, nonconformity="quantile"),
    "okl agaci, default: KernelRLSRegressor()": run_default,
    "okl pinball pair, no calibration": run_pinball_pair,
    "river jackknife": run_river,
    "river jackknife, window 1000": lambda X, y: run_river(X, y, 1000),
}
STREAMS = ("stationary", "heteroscedastic", "drifting", "heavy", "diabetes")


def table(methods=RUNS):
    for stream in STREAMS:
        X, y, oracle = make_stream(stream)
        print(f"\n{stream} ({len(y)} events; alpha = {ALPHA})")
        print(f"| {'method':<40} | coverage | min window | mean width | ratio |")
        print(f"|{'-' * 42}|----------|------------|------------|-------|")
        for name, run in methods.items():
            r = summary(y, *run(X, y), oracle)
            print(f"| {name:<40} | {r['coverage']:.4f} | {r['min window']:.3f} | "
                  f"{r['width']:10.4g} | {r['ratio']:.3f} |")


def widths():
    """Where OnlineKernelRegressor()'s width goes (the absolute score): its ratio beside the
    narrowest constant band on its own residuals, in hindsight (the 0.9 quantile of |y - f(x)| over the stream, per
    phase of 2,000 events on the drifting one): what no calibration of the absolute score can
    beat, and the noise band's ratio to it; on diabetes, the first intervals and the mean width
    after them around either learner."""
    print(f"| stream | OnlineKernelRegressor(), agaci: ratio | hindsight constant band on its "
          "residuals |")
    print("|---|---|---|")
    for stream in ("stationary", "heteroscedastic", "drifting", "heavy"):
        X, y, oracle = make_stream(stream)
        lower, upper = run_okl(X, y)
        finite = np.isfinite(lower) & np.isfinite(upper)
        r = np.abs(y - (np.where(finite, lower, 0.0) + np.where(finite, upper, 0.0)) / 2)
        phase = 2000 if stream == "drifting" else len(y)
        band = np.concatenate([np.full(len(r[s:s + phase]),
                                       2 * np.quantile(r[s:s + phase][finite[s:s + phase]],
                                                       1 - ALPHA))
                               for s in range(0, len(y), phase)])
        row = summary(y, lower, upper, oracle)
        print(f"| {stream} | {row['ratio']:.3f} | "
              f"{band[finite].mean() / (2 * oracle[finite].mean()):.3f} |")
        if stream == "drifting":        # each phase after its first 500 events
            for s in range(0, len(y), phase):
                late = slice(s + 500, s + phase)
                width = (upper[late] - lower[late]).mean()
                print(f"| drifting, events {s + 500}-{s + phase} | "
                      f"{width / (2 * oracle[late].mean()):.3f} | "
                      f"{2 * np.quantile(r[late], 1 - ALPHA) / (2 * oracle[late].mean()):.3f} |")
    X, y, _ = make_stream("diabetes")     # the first intervals around either learner
    for name, run in (("OnlineKernelRegressor()", run_okl),
                      ("KernelRLSRegressor() (default)", run_default)):
        width = np.subtract(*run(X, y)[::-1])
        print(f"diabetes, {name}: widths of events 6-12 {np.round(width[6:13]).tolist()}, "
              f"mean from event 13 {width[13:].mean():.1f}, over passes 2-5 {width[442:].mean():.1f}")


def steps():
    grids = {"0.0005-0.1 (8, default)": "auto", "0.001-0.05 (4)": (0.001, 0.005, 0.02, 0.05),
             "0.005-0.2 (5)": (0.005, 0.01, 0.05, 0.1, 0.2)}
    methods = {f"agaci {g}, window {w}": (lambda X, y, g=v, w=w: run_okl(X, y, gamma=g,
                                                                        window=w))
               for g, v in grids.items() for w in (500, 1000, 2000)}
    table(methods)


def pid():
    methods = {"quantile (P only)": lambda X, y: run_okl(X, y, method="quantile")}
    for gains in ((1.0, 1.0), (0.1, 1.0), (1.0, 0.1), (5.0, 1.0)):
        name = "pid K_I, C_sat = %g, %g%s" % (*gains, " (auto)" if gains == (1.0, 1.0) else "")
        methods[name] = lambda X, y, g=gains: run_okl(X, y, method="pid", integrator=g)
    table(methods)


def median_interval(d, level=0.95):
    """The median of d and a distribution-free interval for it (order statistics: the
    binomial's central `level`; no assumption on the differences' distribution)."""
    d = np.sort(d)
    n = len(d)
    lo = max(int(stats.binom.ppf((1 - level) / 2, n, 0.5)) - 1, 0)
    hi = min(n - 1 - lo, n - 1)
    return np.median(d), d[lo], d[hi]


def paired(models, rows, targets, calls, block=100):
    """Per-event us of predict + learn (`calls[name](model)` gives the two methods) for each
    model, timed in interleaved blocks of `block` events: every model takes the same block in
    turn, in an order drawn at random for each block (a model run just after another of the
    same learner finds its code and branches warm: a fixed cycle would favour one), and each
    block is timed in the thread's CPU time (`time.thread_time_ns`:
    the time this thread ran, so other processes taking the cores count for no model).  Prints
    each model's median and, for the others, the median of its paired difference to the first
    model's with its 95% distribution-free interval and the trimmed mean (10% cut each side)."""
    times = {name: [] for name in models}
    names = list(models)
    order = np.random.default_rng(0)
    for start in range(0, len(rows) - block + 1, block):
        part = list(zip(rows[start:start + block], targets[start:start + block]))
        for i in order.permutation(len(names)):
            name = names[i]
            predict, learn = calls[name](models[name])
            begin = time.thread_time_ns()
            for x, t in part:
                predict(x)
                learn(x, t)
            times[name].append((time.thread_time_ns() - begin) / block * 1e-3)
    first = np.array(times[names[0]])
    for name, values in times.items():
        d = np.array(values) - first
        if name == names[0]:
            extra = ""
        else:
            med, lo, hi = median_interval(d)
            extra = (f"  paired difference {med:+.2f} us (95% {lo:+.2f}..{hi:+.2f}; trimmed "
                     f"mean {stats.trim_mean(d, 0.1):+.2f}), x{np.median(values) / np.median(first):.3f}")
        print(f"  {name:<22} {np.median(values):7.2f}{extra}")


def cost(n=20_000, repeats=5):
    """us per event of predict_interval_one + learn_one beside the base learner's
    predict_one + learn_one (KernelRLSRegressor's wrapper also takes its predictive std: the
    normalised scores): the same rows, in one run, each model warmed on 1,000 events
    first (gamma="scale"'s warm-up is not timed), then timed in interleaved blocks (`paired`;
    medians).  Then the classifier (`classifier_cost`) and the calibration's own update (a
    chunk of scores, in C, the best of `repeats`)."""
    X, y, _ = make_stream("stationary")
    X, y = np.tile(X, (3, 1))[:n + 1000], np.tile(y, 3)[:n + 1000]
    rows = [np.ascontiguousarray(x) for x in X]
    targets = y.tolist()
    print(f"load: {os.getloadavg()}")
    for base in (OnlineKernelRegressor(budget=10), OnlineKernelRegressor(), KernelRLSRegressor(),
                 MultiKernelRegressor()):
        # "base, a copy": the same learner again, a control (its cell is 0 but for what the
        # timing cannot pair away, e.g. where each copy's arrays fall in memory)
        models = {"base": base, "base, a copy": base}
        models.update({m: ConformalRegressor(base, method=m) for m in ("aci", "quantile",
                                                                        "agaci", "pid")})
        for name, model in models.items():
            model = models[name] = copy.deepcopy(model)
            for x, t in zip(rows[:1000], targets[:1000]):
                model.learn_one(x, t)
        print(f"{base!r}: us per event (predict, then learn; {n} events, medians of "
              "blocks of 100, thread CPU time)")
        paired(models, rows[1000:], targets[1000:], {
            name: (lambda m: (m.predict_one, m.learn_one)) if name.startswith("base") else
            (lambda m: (m.predict_interval_one, m.learn_one)) for name in models})
    classifier_cost(n)
    scores = np.abs(np.random.default_rng(0).normal(size=n))
    print("the calibration alone, ns per event (a chunk of scores):")
    for name, gammas in (("aci", (0.005,)), ("quantile", (0.01,)), ("pid", (0.01,)),
                         ("agaci", AUTO_GAMMA["agaci"])):
        seconds = np.inf
        for _ in range(repeats):
            cal = Calibration(METHODS[name], ALPHA, gammas, 1000)
            start = time.thread_time()
            cal.update(scores, np.empty(n))
            seconds = min(seconds, time.thread_time() - start)
        print(f"  {name:<9} {seconds / n * 1e9:7.0f}")
    print(f"load: {os.getloadavg()}")


def classifier_cost(n):
    """ConformalClassifier: predict_set_one + learn_one beside the learner's predict_one +
    learn_one, and its predict_proba_one + learn_one (the probabilities the sets need); "aci":
    the same wrapper with method="aci" (AgACI's share: its experts' update); "dict path": the
    set from the learner's predict_proba_one dict (the Python predict_set_one, as every one was
    before the set was built in C); "python path": that and the wrapper's learn_one without its
    compiled step; digits' rows drawn at random, warmed and timed as in `cost`."""
    from sklearn.datasets import load_digits

    from okl import ConformalClassifier, OnlineKernelClassifier
    X, y = load_digits(return_X_y=True)
    X = (X - X.mean(0)) / np.maximum(X.std(0), 1e-12)
    idx = np.random.default_rng(0).integers(0, len(y), n + 1000)
    rows, labels = [np.ascontiguousarray(x) for x in X[idx]], y[idx].tolist()
    base = OnlineKernelClassifier(loss="logistic", budget=10)
    models = {"base": base, "base, a copy": base, "base, probabilities": base,
              "agaci": ConformalClassifier(base), "aci": ConformalClassifier(base, method="aci"),
              "agaci, dict path": ConformalClassifier(base),
              "agaci, python path": ConformalClassifier(base)}
    for name, model in models.items():
        model = models[name] = copy.deepcopy(model)
        for x, t in zip(rows[:1000], labels[:1000]):
            model.learn_one(x, t)
    print(f"ConformalClassifier({base!r}) on digits: us per event (predict, then learn; "
          f"{n} events, medians of blocks of 100, thread CPU time)")
    paired(models, rows[1000:], labels[1000:], {
        "base": lambda m: (m.predict_one, m.learn_one),
        "base, a copy": lambda m: (m.predict_one, m.learn_one),
        "base, probabilities": lambda m: (m.predict_proba_one, m.learn_one),
        "agaci": lambda m: (m.predict_set_one, m.learn_one),
        "aci": lambda m: (m.predict_set_one, m.learn_one),
        "agaci, dict path": lambda m: (m._predict_set_python, m.learn_one),
        "agaci, python path": lambda m: (m._predict_set_python, m._learn_one_python)})


def sets():
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

    from okl import ConformalClassifier
    print(f"| data set | events | method | coverage | min window | mean set size | error rate |")
    print("|---|---|---|---|---|---|---|")
    for name, load in (("digits", load_digits), ("wine", load_wine),
                       ("breast cancer", load_breast_cancer), ("iris", load_iris)):
        X, y = load(return_X_y=True)
        order = np.random.default_rng(0).permutation(len(y))
        X, y = (X[order] - X.mean(0)) / np.maximum(X.std(0), 1e-12), y[order]
        for method in ("agaci", "aci", "quantile"):
            result = progressive_validation(ConformalClassifier(alpha=ALPHA, method=method), X, y)
            window = result.window_coverage(500)[999:] if len(y) >= 1000 else [np.nan]
            print(f"| {name} | {len(y)} | {method} | {result.covered.mean():.4f} | "
                  f"{np.min(window):.3f} | {result.width.mean():.3f} | "
                  f"{result.metrics['error_rate'][-1]:.4f} |")


if __name__ == "__main__":
    COMMANDS = {"table": table, "widths": widths, "steps": steps, "pid": pid, "cost": cost, "sets": sets}
    COMMANDS[sys.argv[1] if len(sys.argv) > 1 else "table"](*map(int, sys.argv[2:]))
