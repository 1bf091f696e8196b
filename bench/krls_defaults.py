"""KernelRLSRegressor beside okl's first-order regressors, river's and a batch KernelRidge.

Every learner predicts each event before learning it (progressive validation), untuned
unless named "tuned"; tabular streams go through an online standard scaler (okl's or
river's, as the learner's library has), time series are learned raw, as KAFBOX does.

Columns: progressive RMSE over the last 20% of each tabular stream, and for the time
series (one-step prediction, embedded past values) 10 log10 of the MSE after the first
1000 events, KAFBOX's protocol.  "KernelRidge (hindsight)" is scikit-learn's batch
KernelRidge fitted on the first 80% with alpha and gamma chosen on the last 20% (the
best a batch learner could do, knowing the answer); "krls tuned" is the best of a grid of
KernelRLSRegressor settings chosen the same way.

    python bench/krls_defaults.py                  # every stream, every learner
    python bench/krls_defaults.py --streams lorenz mackey_glass --learners krls
    python bench/krls_defaults.py --grid           # also the tuned rows
    python bench/krls_defaults.py --first-scaled   # tabular rows scaled by the first 100 events
    python bench/krls_defaults.py --freeze-after 100   # the online scaler settles after 100 events
"""
import argparse
import itertools
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes, make_friedman1, make_friedman2, make_regression
from sklearn.kernel_ridge import KernelRidge
from sklearn.preprocessing import StandardScaler

from okl import KernelRLSRegressor, MultiKernelRegressor, OnlineKernelRegressor
from okl.pipeline import StreamPipeline
from okl.preprocessing import OnlineStandardScaler
from okl.synth import lorenz, mackey_glass


def streams():
    """name -> (X, y, kind): "tabular" (scaled, RMSE of the last 20%) or "series" (raw, dB)."""
    rng = np.random.default_rng(0)
    out = {}
    X, y = make_friedman1(5000, 10, noise=1.0, random_state=0)
    out["friedman1"] = (X, y, "tabular")
    X, y = make_friedman2(5000, noise=10.0, random_state=0)
    out["friedman2"] = (X, y, "tabular")
    X, y = load_diabetes(return_X_y=True)
    order = rng.permutation(len(y))
    out["diabetes"] = (X[order], y[order], "tabular")
    X, y = make_regression(3000, 8, n_informative=8, noise=5.0, random_state=0)
    out["linear"] = (X, y + 50.0, "tabular")
    x = rng.uniform(-3, 3, 4000)
    out["sine"] = (x[:, None], np.sin(2 * x) + (0.1 + 0.25 * np.abs(x)) * rng.standard_normal(4000),
                   "tabular")
    out["lorenz"] = (*lorenz(10000, embedding=6, random_state=0), "series")
    out["mackey_glass"] = (*mackey_glass(10000, embedding=7, random_state=0), "series")
    return out


def okl_learner(est, kind, freeze_after=None):
    if kind == "tabular":
        return StreamPipeline([("scale", OnlineStandardScaler(freeze_after=freeze_after)),
                               ("learn", est)])
    return est


def okl_scores(est, X, y):
    """Progressive predictions of an okl learner (chunks: its own predict-then-learn loop)."""
    pred = np.empty(len(y))
    if isinstance(est, StreamPipeline):
        for i in range(len(y)):
            pred[i] = est.predict_one(X[i])
            est.learn_one(X[i], float(y[i]))
        return pred
    return est._progressive_scores(X, y, reset=True)


def river_scores(model, X, y):
    pred = np.empty(len(y))
    names = [f"x{j}" for j in range(X.shape[1])]
    for i in range(len(y)):
        x = dict(zip(names, X[i].tolist()))
        p = model.predict_one(x)
        pred[i] = 0.0 if p is None else p
        model.learn_one(x, float(y[i]))
    return pred


def river_learners():
    try:
        from river import compose, ensemble, forest, linear_model, neighbors, preprocessing, tree
    except ImportError:
        return {}

    def scaled(model):
        return lambda: compose.Pipeline(preprocessing.StandardScaler(), model())

    return {
        "river LinearRegression": scaled(linear_model.LinearRegression),
        "river KNN": scaled(neighbors.KNNRegressor),
        "river HoeffdingAdaptiveTree": scaled(tree.HoeffdingAdaptiveTreeRegressor),
        "river ARF": scaled(lambda: forest.ARFRegressor(seed=0)),
        "river AMF": scaled(lambda: forest.AMFRegressor(seed=0)),
        "river BaggingTree": scaled(lambda: ensemble.BaggingRegressor(
            tree.HoeffdingTreeRegressor(), n_models=5, seed=0)),
    }


def figure(pred, y, kind):
    if kind == "series":
        return 10.0 * np.log10(np.mean((pred[1000:] - y[1000:]) ** 2))
    tail = int(0.8 * len(y))
    return float(np.sqrt(np.mean((pred[tail:] - y[tail:]) ** 2)))


RIDGE_ROWS = 3000      # the batch fit's rows, at most (the last before the held-out part)


def hindsight_ridge(X, y, kind):
    """Batch KernelRidge on the first 80% (at most its last RIDGE_ROWS rows; for a series
    the first 1000 events), alpha and gamma chosen on the rest."""
    tail = 1000 if kind == "series" else int(0.8 * len(y))
    head = max(0, tail - RIDGE_ROWS)
    scaler = StandardScaler().fit(X[head:tail])
    A, B = scaler.transform(X[head:tail]), scaler.transform(X[tail:])
    best = np.inf
    for alpha, gamma in itertools.product((1e-6, 1e-4, 1e-2, 1e-1, 1.0),
                                          (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)):
        gamma = gamma / X.shape[1]
        model = KernelRidge(alpha=alpha, kernel="rbf", gamma=gamma).fit(A, y[head:tail])
        err = np.mean((model.predict(B) - y[tail:]) ** 2)
        best = min(best, err)
    return 10 * np.log10(best) if kind == "series" else float(np.sqrt(best))


KRLS_GRID = [dict(noise=n, gamma=g, budget=b)
             for n in (1e-6, 1e-4, 1e-2, 1e-1) for g in ("scale", "x0.25", "x4")
             for b in (200, 500)]


def krls_tuned(X, y, kind):
    from okl._gamma import scale_gamma
    best, setting = np.inf, None
    for params in KRLS_GRID:
        params = dict(params)
        if params["gamma"] != "scale":
            factor = float(params["gamma"][1:])
            Z = StandardScaler().fit_transform(X) if kind == "tabular" else X
            params["gamma"] = factor * scale_gamma(Z[:100])
        est = okl_learner(KernelRLSRegressor(**params), kind)
        value = figure(okl_scores(est, X, y), y, kind)
        if value < best:
            best, setting = value, params
    return best, setting


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", nargs="*", default=None)
    parser.add_argument("--learners", nargs="*", default=None,
                        help="substrings of the learner names to run")
    parser.add_argument("--grid", action="store_true", help="also the tuned KRLS row")
    parser.add_argument("--first-scaled", action="store_true",
                        help="okl learns tabular rows scaled by the moments of the first 100 "
                             "events (a settled scale) instead of through an online scaler")
    parser.add_argument("--freeze-after", type=int, default=None,
                        help="okl's online scaler learns the moments of this many events, "
                             "then holds them (OnlineStandardScaler(freeze_after=))")
    args = parser.parse_args(argv)
    data = streams()
    names = args.streams or list(data)
    learners = {
        "okl KernelRLSRegressor()": lambda: KernelRLSRegressor(),
        "okl KernelRLSRegressor(kernel='auto')": lambda: KernelRLSRegressor(kernel="auto"),
        "okl OnlineKernelRegressor()": lambda: OnlineKernelRegressor(),
        "okl MultiKernelRegressor()": lambda: MultiKernelRegressor(),
        "okl MultiKernelRegressor(learner='sgd')": lambda: MultiKernelRegressor(learner="sgd"),
    }
    rivers = river_learners()
    warnings.simplefilter("ignore")
    header = ["learner"] + names
    rows = []
    for label, make in list(learners.items()) + list(rivers.items()):
        if args.learners and not any(s.lower() in label.lower() for s in args.learners):
            continue
        row = [label]
        for name in names:
            X, y, kind = data[name]
            start = time.process_time()
            if label.startswith("okl") and args.first_scaled and kind == "tabular":
                pred = okl_scores(make(), (X - X[:100].mean(0)) / X[:100].std(0), y)
            elif label.startswith("okl"):
                pred = okl_scores(okl_learner(make(), kind, args.freeze_after), X, y)
            else:
                pred = river_scores(make(), X, y)
            cost = (time.process_time() - start) / len(y) * 1e6
            row.append(f"{figure(pred, y, kind):.3f} ({cost:.0f} us)")
            print(label, name, row[-1], flush=True)
        rows.append(row)
    if args.grid:
        row = ["okl KernelRLSRegressor tuned"]
        for name in names:
            X, y, kind = data[name]
            value, setting = krls_tuned(X, y, kind)
            row.append(f"{value:.3f}")
            print("tuned", name, value, setting, flush=True)
        rows.append(row)
    rows.append(["KernelRidge (hindsight)"] + [f"{hindsight_ridge(*data[n]):.3f}" for n in names])
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
