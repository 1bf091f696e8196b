"""The multi-kernel defaults against the best single width in hindsight, river and VW (docs/multikernel.md).

Each data set (scikit-learn's bundled breast cancer, digits 0-4 vs 5-9,
digits 10 classes, diabetes) is shuffled once (seed 0) and scaled
online by okl's OnlineStandardScaler (each event scaled with the statistics
that include it); one progressive pass (predict, then learn) gives the
accuracy or the RMSE of:

- "multi": MultiKernelClassifier() / MultiKernelRegressor(), no parameters;
- "best width": the best OnlineKernelClassifier/Regressor over the widths of
  gammas="auto" (2^j / n_features, j = -4..3), with the combination's base
  parameters (loss, lam, eta, eta_decay, fit_intercept), chosen in hindsight;
- "best learner": the best single learner of the default grid (widths x step
  scales), chosen in hindsight;
- "single default": OnlineKernelClassifier() / OnlineKernelRegressor();
- river's LogisticRegression / LinearRegression (one-vs-rest with 10
  classes) and KNNClassifier / KNNRegressor with their defaults, on the same
  scaled events (where river is installed);
- Vowpal Wabbit (where installed: ``pip install vowpalwabbit``, the bench
  extra): its kernel SVM (``--ksvm --kernel rbf``, binary streams) and a
  linear model (logistic, ``--oaa 10`` with 10 classes, squared for
  diabetes), each with a small grid (`VW_GRIDS`) tuned on the first 20% of
  the stream (progressive score there), then one progressive pass of the
  whole stream with the chosen arguments.

    python bench/multikernel_defaults.py
"""
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits

from okl import (
    MultiKernelClassifier, MultiKernelRegressor, OnlineKernelClassifier, OnlineKernelRegressor,
)
from okl.multikernel import AUTO_GAMMAS
from okl.preprocessing import OnlineStandardScaler


def scaled_stream(name):
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
    else:
        X, y = load_digits(return_X_y=True)
        if name == "digits_binary":
            y = (y >= 5).astype(int)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order]
    scaler, Z = OnlineStandardScaler(), np.empty_like(X, dtype=np.float64)
    for i, x in enumerate(X):
        scaler.partial_fit(x[None, :])
        Z[i] = scaler.transform(x[None, :])[0]
    return Z, y.astype(np.float64) if name == "diabetes" else y


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
    cut = len(y) // 5
    grid = [a.format(q=0.25 / d, one=1.0 / d, four=4.0 / d) for a in grid]
    pick = min if task == "regression" else max
    prefix = {args: vw_quality(args, Z[:cut], y[:cut], task, classes) for args in grid}
    best = pick(prefix, key=prefix.get)
    return vw_quality(best, Z, y, task, classes), best


def main():
    try:
        from river import linear_model, neighbors
    except ImportError:
        linear_model = neighbors = None
    try:
        import vowpalwabbit
    except ImportError:
        vowpalwabbit = None
    rows = []
    for name in ("breast_cancer", "digits_binary", "diabetes", "digits_10"):
        Z, y = scaled_stream(name)
        classify, d = name != "diabetes", Z.shape[1]
        row = {"stream": name}
        Single = OnlineKernelClassifier if classify else OnlineKernelRegressor
        Multi = MultiKernelClassifier if classify else MultiKernelRegressor
        pick = max if classify else min
        start = time.perf_counter()
        row["multi"] = okl_quality(Multi(), Z, y)
        row["multi s"] = time.perf_counter() - start
        multi = Multi()
        base = {name: getattr(multi, name)      # the combination's base learner
                for name in ("loss", "lam", "eta", "eta_decay", "fit_intercept")}
        widths = {g: okl_quality(Single(gamma=g / d, budget=None, **base), Z, y)
                  for g in AUTO_GAMMAS}
        best = pick(widths, key=widths.get)
        row["best width"], row["gamma*d"] = widths[best], best
        # learner (g, c) of the grid: eta_t = c / ((lam + M) t**eta_decay), M = 1 for the
        # default losses (hinge; squared with C_K^2 = 1)
        learners = [okl_quality(Single(gamma=g / d, budget=None, **dict(
            base, eta=c / (multi.lam + 1.0))), Z, y) for g in AUTO_GAMMAS
            for c in multi.eta_scales]
        row["best learner"] = pick(learners)
        row["single default"] = okl_quality(Single(), Z, y)
        if vowpalwabbit is not None:
            task = ("regression" if not classify else "multiclass" if name == "digits_10"
                    else "binary")
            for label, grid in VW_GRIDS.items():
                if label == "VW ksvm" and task != "binary":
                    continue            # VW's kernel SVM is a binary classifier
                row[label], row[label + " args"] = vw_tuned(grid, Z, y, task)
        if linear_model is not None:
            linear = (linear_model.LogisticRegression() if classify
                      else linear_model.LinearRegression())
            if name == "digits_10":
                from river import multiclass
                linear = multiclass.OneVsRestClassifier(linear_model.LogisticRegression())
            row["river linear"] = river_quality(linear, Z, y, classify)
            knn = neighbors.KNNClassifier() if classify else neighbors.KNNRegressor()
            row["river KNN"] = river_quality(knn, Z, y, classify)
        rows.append(row)
        print(row, flush=True)
    columns = ["stream", "multi", "best width", "gamma*d", "best learner", "single default",
               "river linear", "river KNN", "VW ksvm", "VW linear"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        cells = []
        for c in columns:
            v = row.get(c, "")
            cells.append(f"{v:.4f}" if isinstance(v, float) and v < 10 and c != "gamma*d"
                         else f"{v:.2f}" if isinstance(v, float) else str(v))
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
