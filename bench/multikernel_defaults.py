"""The multi-kernel defaults against the best single width in hindsight, and river (docs/multikernel.md).

Each data set (scikit-learn's bundled breast cancer, digits 0-4 vs 5-9, digits
10 classes for river only, diabetes) is shuffled once (seed 0) and scaled
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
- river's LogisticRegression / LinearRegression and KNNClassifier /
  KNNRegressor with their defaults, on the same scaled events.

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


def main():
    try:
        from river import linear_model, neighbors
    except ImportError:
        linear_model = neighbors = None
    rows = []
    for name in ("breast_cancer", "digits_binary", "diabetes", "digits_10"):
        Z, y = scaled_stream(name)
        classify, d = name != "diabetes", Z.shape[1]
        row = {"stream": name}
        if name != "digits_10":
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
               "river linear", "river KNN"]
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
