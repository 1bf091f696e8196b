"""The multi-kernel defaults, untuned, beside tuned peers, river and VW (docs/multikernel.md).

Each data set (scikit-learn's bundled breast cancer, digits 0-4 vs 5-9,
digits with 10 classes, wine, iris, diabetes) is shuffled once (seed 0; the
short streams, the first 150 or 200 events, over the shuffles of seeds 0-4,
whose figures are averaged) and scaled online by okl's OnlineStandardScaler
(each event scaled with the statistics that include it); one progressive pass
(predict, then learn; okl's chunks give the iterates of one event at a time)
gives the accuracy or the RMSE of:

- "multi": MultiKernelClassifier() / MultiKernelRegressor(learner="sgd") (the first-order pool; the
  regressor's default is the second-order one, docs/krls.md), no other parameters;
- "before": the previous defaults, the papers' pool without a budget
  (``eta="auto", eta_scales=(1, 4, 16)`` for the classifier, ``linear=False,
  forgetting=None, share=0.0, budget=None``);
- "no adaptation": the defaults with ``forgetting=None, share=0.0`` (the
  stationary cost of the adaptation, docs/multikernel.md, section 9);
- "single": OnlineKernelClassifier() / OnlineKernelRegressor();
- "tuned single": the best OnlineKernelClassifier / OnlineKernelRegressor
  over the widths 2^j / n_features, j = -4..5 (its other defaults), chosen in
  hindsight;
- river's LogisticRegression / LinearRegression (one-vs-rest beyond two
  classes), KNNClassifier / KNNRegressor and ARFClassifier / ARFRegressor (the
  adaptive random forest) with their defaults, on the same scaled events
  (where river is installed);
- Vowpal Wabbit (where installed: ``pip install vowpalwabbit``, the bench
  extra): its kernel SVM (``--ksvm --kernel rbf``, binary streams) and a
  linear model (logistic, ``--oaa k`` beyond two classes, squared for
  diabetes), each with a small grid (`VW_GRIDS`) tuned on the first 20% of
  the stream (progressive score there), then one progressive pass of the
  whole stream with the chosen arguments.

``budgets`` prints the defaults with budgets of None, 1000, 500 and 200
centres, ``policies`` the three budget policies at 50 and 100 centres, on the
full streams; ``params`` the defaults beside the defaults with each given
set of parameters, on every stream (``auto_gammas=...`` replaces
`okl.multikernel.AUTO_GAMMAS`, the relative widths of gammas="auto";
``hedge_start=lambda e: ...`` multiplies the classifier's Hedge start weights by a
function of the log2 e of each learner's relative width, NaN for the linear
learners, `started`; a cell is
blank where the learner has no such parameter, as the regressor's for
``forgetting_start``);
``singles`` the single learner's figure at each width 2^j / n_features of the
"tuned single" column; ``short`` where the short classification streams (wine and
iris too) lose: the mistakes per shuffle in events 1-10, 11-50, 51-100 and the
rest of the defaults' vote, of the pool's best learner in hindsight (its own
progressive predictions), of the vote with its widths fixed at their final scale
(``gammas=AUTO_GAMMAS / n_features``: the streams are standardized), of the best
fixed width of the "tuned single" column and of that column, and the widths' scale ``1 / tr(Cov)`` (times n_features)
after 2, 4, ..., 64 events, and the learner of largest Hedge weight after 10, 50
and 100 events (its relative width, "f" if it forgets, else its step scale, and its
weight).
``tuning`` compares the defaults on the short streams with OnlineKernelClassifier tuned over the
widths of the "tuned single" column in four ways: on each shuffle in hindsight (that column), the
width best over all the shuffles in hindsight, the width best on the other four shuffles (tuned on
held-out streams of the same data, leave one shuffle out) and the width best on the first 20% of
the stream (the protocol of VW's columns, scored on the whole stream).
``step`` sets the classifier's step over kbar (``eta="scaled"``, the default, docs/multikernel.md,
section 4) beside the previous default step (``eta="auto", eta_scales=(2.0, 16.0)``) and other step
scales, over 20 shuffles of the short streams, wine and iris and 5 of the full ones (mean and
standard error), then ``tuning`` over the same 20 shuffles.
``start`` sets the classifier's Hedge start over the widths (``width_start=True``, the default,
docs/multikernel.md, section 6) beside ``width_start=False``, over 100 shuffles of the short streams,
wine and iris and 5 of the full ones, then ``tuning`` over the same 100 shuffles, then both on
`GENERATED` streams of scikit-learn's generators (3,000 events, 10 seeds each, the paired
difference's mean and standard error).

    python bench/multikernel_defaults.py [budgets | policies | singles | short | tuning | step | start]
    python bench/multikernel_defaults.py params "beta=0.5" "linear=False" ...
    python bench/multikernel_defaults.py params "auto_gammas=[2.0 ** j for j in range(-2, 6)]"
    python bench/multikernel_defaults.py params "hedge_start=lambda e: np.where(e >= 2, 2.0, 1.0)"
"""
import os
import re
import warnings

import numpy as np

import okl.multikernel
from sklearn import datasets
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine

from okl import (  # noqa: F401 (the learners are named in LEARNERS)
    MultiKernelClassifier, MultiKernelRegressor, OnlineKernelClassifier, OnlineKernelRegressor,
)
from okl.kernels import KernelScaleWarning
from okl.preprocessing import OnlineStandardScaler

#: (row label, data set, events or None for all, shuffles)
STREAMS = [
    ("breast cancer (569)", "breast_cancer", None, (0,)),
    ("digits 0-4 vs 5-9 (1797)", "digits_binary", None, (0,)),
    ("digits, 10 classes (1797)", "digits_10", None, (0,)),
    ("wine, 3 classes (178, 5 shuffles)", "wine", None, range(5)),
    ("iris, 3 classes (150, 5 shuffles)", "iris", None, range(5)),
    ("breast cancer, first 150 (5 shuffles)", "breast_cancer", 150, range(5)),
    ("digits 0-4 vs 5-9, first 200 (5 shuffles)", "digits_binary", 200, range(5)),
    ("digits 10 classes, first 200 (5 shuffles)", "digits_10", 200, range(5)),
    ("diabetes (442), RMSE", "diabetes", None, (0,)),
    ("diabetes, first 150 (5 shuffles), RMSE", "diabetes", 150, range(5)),
]

BEFORE = "linear=False, forgetting=None, share=0.0, budget=None"
LEARNERS = {
    True: {"multi": "MultiKernelClassifier()",
           "before": f"MultiKernelClassifier(eta='auto', eta_scales=(1.0, 4.0, 16.0), {BEFORE}, "
                     "width_start=False)",
           "no adaptation": "MultiKernelClassifier(forgetting=None, share=0.0)",
           "single": "OnlineKernelClassifier()"},
    False: {"multi": "MultiKernelRegressor(learner='sgd')",      # the first-order pool
            "before": f"MultiKernelRegressor(learner='sgd', {BEFORE})",
            "no adaptation": "MultiKernelRegressor(learner='sgd', forgetting=None, share=0.0)",
            "single": "OnlineKernelRegressor()"},
}


def scaled_stream(name, n=None, seed=0):
    loader = {"breast_cancer": load_breast_cancer, "diabetes": load_diabetes,
              "wine": load_wine, "iris": load_iris}.get(name, load_digits)
    X, y = loader(return_X_y=True)
    if name == "digits_binary":
        y = (y >= 5).astype(int)
    order = np.random.default_rng(seed).permutation(len(X))[:n]
    X, y = X[order], y[order]
    return online_scaled(X), y.astype(np.float64) if name == "diabetes" else y


def online_scaled(X):
    """X scaled online by OnlineStandardScaler, each row with the statistics that include it."""
    scaler, Z = OnlineStandardScaler(), np.empty_like(X, dtype=np.float64)
    for i, x in enumerate(X):
        scaler.partial_fit(x[None, :])
        Z[i] = scaler.transform(x[None, :])[0]
    return Z


def okl_quality(est, Z, y):
    if hasattr(est, "classes"):
        f = est._progressive_scores(Z, y, classes=np.unique(y), reset=True)
        return float(np.mean(est._predictions(f) == y))
    return float(np.sqrt(np.mean((est._progressive_scores(Z, y, reset=True) - y) ** 2)))


def river_quality(model, Z, y, classify):
    hits, sq = 0, 0.0
    for z, target in zip(Z, y):
        x = dict(enumerate(z))
        p = model.predict_one(x)
        if classify:
            hits += p == target
        else:
            sq += ((p or 0.0) - target) ** 2
        model.learn_one(x, target.item() if hasattr(target, "item") else target)
    return hits / len(y) if classify else float(np.sqrt(sq / len(y)))


def river_models(classify, n_classes):
    """river's learners by column, or {} without river."""
    try:
        from river import forest, linear_model, multiclass, neighbors
    except ImportError:
        return {}
    if not classify:
        return {"river linear": linear_model.LinearRegression,
                "river KNN": neighbors.KNNRegressor,
                "river ARF": lambda: forest.ARFRegressor(seed=0)}
    linear = (linear_model.LogisticRegression if n_classes == 2 else
              lambda: multiclass.OneVsRestClassifier(linear_model.LogisticRegression()))
    return {"river linear": linear, "river KNN": neighbors.KNNClassifier,
            "river ARF": lambda: forest.ARFClassifier(seed=0)}


#: VW's arguments tried on the first 20% of each stream (widths 1/4, 1, 4 times 1/d).
VW_GRIDS = {
    "VW ksvm": [f"--ksvm --kernel rbf --bandwidth {b} --l2 {l2}"
                for b in ("{q}", "{one}", "{four}") for l2 in ("1e-4", "1e-2")],
    "VW linear": [f"-l {rate}" for rate in ("0.1", "0.5", "2")],
}


def vw_quality(args, Z, y, task, classes):
    """One progressive pass of VW (predict, then learn) with `args`; task: "binary",
    "multiclass" or "regression"."""
    from vowpalwabbit import Workspace
    extra = {"binary": " --loss_function logistic" if "ksvm" not in args else "",
             "multiclass": f" --oaa {len(classes)} --loss_function logistic",
             "regression": ""}[task]
    vw = Workspace(args + extra + " --quiet")
    hits, sq = 0, 0.0
    for z, target in zip(Z, y):
        feats = "| " + " ".join(f"{j}:{v:.17g}" for j, v in enumerate(z) if v != 0)
        if task == "binary":
            label = 1 if target == classes[1] else -1
            hits += (1 if vw.predict(feats) > 0 else -1) == label
        elif task == "multiclass":
            label = int(np.searchsorted(classes, target)) + 1
            hits += vw.predict(feats) == label
        else:
            label = float(target)
            sq += (vw.predict(feats) - label) ** 2
        vw.learn(f"{label} {feats}")
    vw.finish()
    return hits / len(y) if task != "regression" else float(np.sqrt(sq / len(y)))


def vw_tuned(grid, Z, y, task):
    """VW with the arguments of `grid` best on the first 20% of the stream, on all of it."""
    d, classes = Z.shape[1], np.unique(y)
    cut = max(len(y) // 5, 10)
    grid = [a.format(q=0.25 / d, one=1.0 / d, four=4.0 / d) for a in grid]
    pick = min if task == "regression" else max
    prefix = {args: vw_quality(args, Z[:cut], y[:cut], task, classes) for args in grid}
    return vw_quality(pick(prefix, key=prefix.get), Z, y, task, classes)


def row(name, n, seeds):
    """The figures of one stream, averaged over its shuffles."""
    try:
        import vowpalwabbit
    except ImportError:
        vowpalwabbit = None
    classify = name != "diabetes"
    Single = OnlineKernelClassifier if classify else OnlineKernelRegressor
    pick = max if classify else min
    cells = {}
    for seed in seeds:
        Z, y = scaled_stream(name, n, seed)
        d, k = Z.shape[1], len(np.unique(y))
        out = {column: okl_quality(eval(label), Z, y)
               for column, label in LEARNERS[classify].items()}
        out["tuned single"] = pick(okl_quality(Single(gamma=2.0 ** j / d), Z, y)
                                   for j in range(-4, 6))
        for column, make in river_models(classify, k).items():
            out[column] = river_quality(make(), Z, y, classify)
        if vowpalwabbit is not None:
            task = "regression" if not classify else "binary" if k == 2 else "multiclass"
            for column, grid in VW_GRIDS.items():
                if column != "VW ksvm" or task == "binary":    # VW's kernel SVM is binary
                    out[column] = vw_tuned(grid, Z, y, task)
        for column, value in out.items():
            cells.setdefault(column, []).append(value)
    return {column: float(np.mean(values)) for column, values in cells.items()}


def started(prior):
    """MultiKernelClassifier's start with its Hedge start weights also multiplied by
    ``prior(e)``, e the log2 of each learner's relative width (NaN for the linear ones)."""
    base = MultiKernelClassifier._start

    def _start(self, X, y):
        base(self, X, y)
        state = self._model.get_state()
        width_of, gammas = np.asarray(state["width_of"]), np.asarray(state["gammas"])
        e = np.where(width_of >= 0, np.log2(gammas[np.maximum(width_of, 0)]), np.nan)
        q = np.asarray(state["q"]) * np.asarray(prior(e), dtype=np.float64)
        self._model = type(self._model).from_state(dict(state, q=q / q.sum()))
    return _start


def grid(columns, short=False, shuffles=None):
    """The defaults with the parameters of each column, on the full streams (and the short
    ones with `short`); `shuffles` (full, others): so many shuffles of each stream, the cells
    "mean ± standard error", the regressor's rows left out."""
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| stream | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 1))
    for label, name, n, seeds in STREAMS:
        if n is not None and not short:
            continue
        classify = name != "diabetes"
        if shuffles:
            if not classify:
                continue
            seeds = range(shuffles[n is not None or len(seeds) > 1])
            label = (re.sub(r"\d+ shuffles", f"{len(seeds)} shuffles", label)
                     if "shuffles" in label else f"{label[:-1]}, {len(seeds)} shuffles)")
        Multi = MultiKernelClassifier if classify else MultiKernelRegressor
        first_order = {} if classify else {"learner": "sgd"}     # the regressor's Hedge pool
        cells = []
        for params in columns.values():
            params, default = dict(params), okl.multikernel.AUTO_GAMMAS
            extra = {"auto_gammas"} | ({"hedge_start"} if classify else set())
            if not params.keys() - extra <= Multi().get_params().keys():
                cells.append(None)      # a parameter this learner does not have: blank
                continue
            okl.multikernel.AUTO_GAMMAS = tuple(params.pop("auto_gammas", default))
            start, own_start = params.pop("hedge_start", None), Multi._start
            if start is not None:
                Multi._start = started(start)
            try:
                cells.append([okl_quality(Multi(**params, **first_order),
                                          *scaled_stream(name, n, seed)) for seed in seeds])
            finally:
                okl.multikernel.AUTO_GAMMAS = default
                Multi._start = own_start
        print(f"| {label} | " + " | ".join(_cell(c, shuffles) for c in cells) + " |", flush=True)


def _cell(values, spread):
    """The mean of a grid cell (blank for None), with its standard error when `spread`."""
    if values is None:
        return ""
    mean = np.mean(values)
    text = f"{mean:.4f}" if mean < 10 else f"{mean:.2f}"
    return text + (f" ± {np.std(values) / np.sqrt(len(values)):.4f}" if spread else "")


def singles():
    """The single learner at each width 2^j / n_features (the "tuned single" column's grid)."""
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| stream | " + " | ".join(f"j={j}" for j in range(-4, 6)) + " |")
    print("|" + "---|" * 11)
    for label, name, n, seeds in STREAMS:
        classify = name != "diabetes"
        Single = OnlineKernelClassifier if classify else OnlineKernelRegressor
        cells = [np.mean([okl_quality(Single(gamma=2.0 ** j / Z.shape[1]), Z, y)
                          for Z, y in (scaled_stream(name, n, seed) for seed in seeds)])
                 for j in range(-4, 6)]
        print(f"| {label} | " + " | ".join(f"{c:.4f}" if c < 10 else f"{c:.2f}" for c in cells)
              + " |", flush=True)


#: The event ranges of ``short`` (the last one: the rest of the stream).
SHORT_RANGES = ((0, 10), (10, 50), (50, 100), (100, None))


def leader(est):
    """The learner of largest Hedge weight: its relative width 2^j (or "linear"), "f" if it
    forgets, and its weight."""
    k = int(np.argmax(est.weights_))
    width_of = est._model.get_state()["width_of"][k]
    kind = "linear" if width_of < 0 else f"2^{np.log2(okl.multikernel.AUTO_GAMMAS[width_of]):g}"
    forgets = " f" if est.forgetting_[k] > 0 else f" x{est.eta_scales_[k]:g}"
    return f"{kind}{forgets} {est.weights_[k]:.2f}"


def mistakes(est, Z, y):
    """The progressive mistakes (True / False per event) of `est` on the stream."""
    return est._predictions(est._progressive_scores(Z, y, classes=np.unique(y), reset=True)) != y


def pool_mistakes(Z, y):
    """(the vote's mistakes, every learner's mistakes (events, learners), the widths' scale
    1 / tr(Cov) times n_features after 2, 4, ..., 64 events, the `leader` after 10, 50 and
    100 events) of MultiKernelClassifier(), learning one event at a time; on the first
    event every learner says what the vote says."""
    classes = np.unique(y)
    vote = mistakes(MultiKernelClassifier(), Z, y)
    est = MultiKernelClassifier().partial_fit(Z[:1], y[:1], classes=classes)
    own, scale, leaders = [np.full(len(est.weights_), vote[0])], [], []
    for t in range(1, len(y)):
        f = est.learner_decisions(Z[t:t + 1])[0]
        own.append(classes[np.argmax(f, axis=1) if f.ndim > 1 else (f > 0).astype(int)] != y[t])
        est.partial_fit(Z[t:t + 1], y[t:t + 1])
        if t + 1 in (2, 4, 8, 16, 32, 64):      # learner 0 has the first relative width
            scale.append(est.gammas_[0] / okl.multikernel.AUTO_GAMMAS[0] * Z.shape[1])
        if t + 1 in (10, 50, 100):
            leaders.append(leader(est))
    return vote, np.array(own), scale, leaders


def short():
    """Where the short classification streams lose (the mistakes per shuffle by event range)."""
    print(f"load average {os.getloadavg()[0]:.1f}")
    ranges = [f"{a + 1}-{b or 'end'}" for a, b in SHORT_RANGES]
    print("| stream | learner | " + " | ".join(ranges) + " | accuracy |")
    print("|" + "---|" * (len(ranges) + 3))
    for label, name, n, seeds in STREAMS:
        if name == "diabetes" or (n is None and name not in ("wine", "iris")):
            continue
        vote, best, still, tuned, scales, leaders = [], [], [], [], [], []
        fixed = {j: [] for j in range(-4, 6)}
        for seed in seeds:
            Z, y = scaled_stream(name, n, seed)
            d = Z.shape[1]
            v, own, scale, lead = pool_mistakes(Z, y)
            vote.append(v)
            best.append(own[:, np.argmin(own.sum(axis=0))])
            scales.append(scale)
            leaders.append(lead)
            gammas = [g / d for g in okl.multikernel.AUTO_GAMMAS]
            still.append(mistakes(MultiKernelClassifier(gammas=gammas), Z, y))
            for j in fixed:
                fixed[j].append(mistakes(OnlineKernelClassifier(gamma=2.0 ** j / d), Z, y))
            tuned.append(min((fixed[j][-1] for j in fixed), key=np.sum))
        j = min(fixed, key=lambda j: np.sum(fixed[j]))
        for who, m in (("defaults' vote", vote), ("pool's best learner", best),
                       ("the vote, widths fixed at AUTO_GAMMAS / d", still),
                       (f"best fixed width 2^{j} / d", fixed[j]), ("tuned single", tuned)):
            print(f"| {label} | {who} | " + " | ".join(
                f"{np.mean([x[a:b].sum() for x in m]):.1f}" for a, b in SHORT_RANGES)
                + f" | {1 - np.mean(m):.4f} |")
        print(f"| {label} | scale x d after 2, 4, .., 64 events | "
              + ", ".join(f"{s:.2f}" for s in np.mean(scales, axis=0)) + " |")
        for i, t in enumerate((10, 50, 100)):
            print(f"| {label} | leader after {t} events, by shuffle | "
                  + ", ".join(lead[i] for lead in leaders) + " |", flush=True)


def tuning(shuffles=None):
    """The defaults beside OnlineKernelClassifier tuned four ways on the short streams (over
    `shuffles` shuffles of each, or those of `STREAMS`)."""
    columns = ["multi", "tuned single (each shuffle, hindsight)", "best fixed width (hindsight)",
               "tuned on the other shuffles", "tuned on the first 20%"]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| stream | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 1))
    for label, name, n, seeds in STREAMS:
        if name == "diabetes" or len(seeds) == 1:
            continue
        if shuffles:
            seeds = range(shuffles)
            label = re.sub(r"\d+ shuffles", f"{shuffles} shuffles", label)
        whole, prefix, multi = [], [], []
        for seed in seeds:
            Z, y = scaled_stream(name, n, seed)
            d, cut = Z.shape[1], max(len(y) // 5, 10)
            with warnings.catch_warnings():     # the narrow widths warn of islands
                warnings.simplefilter("ignore", KernelScaleWarning)
                whole.append([okl_quality(OnlineKernelClassifier(gamma=2.0 ** j / d), Z, y)
                              for j in range(-4, 6)])
                prefix.append([okl_quality(OnlineKernelClassifier(gamma=2.0 ** j / d), Z[:cut],
                                           y[:cut]) for j in range(-4, 6)])
            multi.append(okl_quality(MultiKernelClassifier(), Z, y))
        whole, prefix = np.array(whole), np.array(prefix)
        held_out = [whole[i, np.argmax(np.delete(whole, i, axis=0).mean(axis=0))]
                    for i in range(len(whole))]
        first = [whole[i, np.argmax(prefix[i])] for i in range(len(whole))]
        cells = [np.mean(multi), whole.max(axis=1).mean(), whole.mean(axis=0).max(),
                 np.mean(held_out), np.mean(first)]
        print(f"| {label} | " + " | ".join(f"{c:.4f}" for c in cells) + " |", flush=True)


#: Streams of scikit-learn's generators (3,000 events; `seed` the generator's random_state).
GENERATED = {
    "make_hastie_10_2": lambda seed: datasets.make_hastie_10_2(3000, random_state=seed),
    "make_classification (20 features, 5 informative, 5% flipped)": lambda seed:
        datasets.make_classification(3000, 20, n_informative=5, flip_y=0.05, random_state=seed),
    "make_classification (4 classes, 10 features)": lambda seed: datasets.make_classification(
        3000, 10, n_informative=6, n_classes=4, n_clusters_per_class=1, random_state=seed),
    "make_gaussian_quantiles (3 classes, 6 features)": lambda seed:
        datasets.make_gaussian_quantiles(n_samples=3000, n_features=6, n_classes=3,
                                         random_state=seed),
    "make_moons (noise 0.3)": lambda seed: datasets.make_moons(3000, noise=0.3, random_state=seed),
    "make_circles (noise 0.2)": lambda seed: datasets.make_circles(3000, noise=0.2, factor=0.5,
                                                                   random_state=seed),
}


def generated(columns, seeds=range(10)):
    """MultiKernelClassifier with the parameters of each column on the `GENERATED` streams,
    scaled online: mean accuracy, and each later column's paired difference from the first."""
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| stream | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 1))
    for label, make in GENERATED.items():
        cells = []
        for params in columns.values():
            values = []
            for seed in seeds:
                X, y = make(seed)
                values.append(okl_quality(MultiKernelClassifier(**params), online_scaled(X), y))
            cells.append(np.array(values))
        text = [f"{cells[0].mean():.4f}"] + [
            f"{c.mean():.4f} ({np.mean(c - cells[0]):+.4f} ± "
            f"{np.std(c - cells[0]) / np.sqrt(len(c)):.4f})" for c in cells[1:]]
        print(f"| {label} | " + " | ".join(text) + " |", flush=True)


def main():
    columns = ["multi", "before", "no adaptation", "single", "tuned single", "river linear",
               "river KNN", "river ARF", "VW linear", "VW ksvm"]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| stream | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 1))
    for label, name, n, seeds in STREAMS:
        cells = row(name, n, seeds)
        print(f"| {label} | " + " | ".join(
            "" if c not in cells else f"{cells[c]:.4f}" if cells[c] < 10 else f"{cells[c]:.2f}"
            for c in columns) + " |", flush=True)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["budgets"]:
        grid({f"budget={b!r}": dict(budget=b) for b in (None, 1000, 500, 200)})
    elif sys.argv[1:] == ["singles"]:
        singles()
    elif sys.argv[1:] == ["short"]:
        short()
    elif sys.argv[1:] == ["tuning"]:
        tuning()
    elif sys.argv[1:] == ["step"]:
        grid({"defaults": {}, "eta='auto', eta_scales=(2.0, 16.0) (before)":
              dict(eta="auto", eta_scales=(2.0, 16.0)),
              **{f"eta_scales={c}": dict(eta_scales=c)
                 for c in ((0.125, 1.0), (0.25, 2.0), (0.5, 2.0), (0.5, 8.0))}},
             short=True, shuffles=(5, 20))
        tuning(20)
    elif sys.argv[1:] == ["start"]:
        columns = {"defaults": {}, "width_start=False (before)": dict(width_start=False)}
        grid(columns, short=True, shuffles=(5, 100))
        tuning(100)
        generated(columns)
    elif sys.argv[1:] == ["policies"]:
        grid({f"{p} B={b}": dict(budget=b, budget_policy=p) for b in (50, 100)
              for p in ("merge", "smallest", "oldest")})
    elif sys.argv[1:2] == ["params"]:      # params "beta=0.5" "eta_scales=(1.0, 4.0, 16.0)" ...
        grid({"defaults": {}, **{a: eval(f"dict({a})") for a in sys.argv[2:]}}, short=True)
    else:
        main()
