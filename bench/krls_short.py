"""The regression defaults on short streams: the first 150 events through a running scaler.

Every learner predicts each event before learning it, one event at a time, its rows scaled by
the moments of the events so far (okl's learners through
``StreamPipeline([OnlineStandardScaler(), learner])``, river's through its StandardScaler).
Five shuffles (seeds 0-4) of five streams of 300 events: diabetes (its first 300 rows after the
shuffle), Friedman #1 (10 features, noise 1), Friedman #2 (noise 10), a linear one
(make_regression, 8 features, noise 5, +50) and bench/krls_defaults.py's noisy sine.  The
figure is the progressive RMSE over events 2-150 (the first is predicted before any learning),
averaged over the shuffles; ``--windows`` also prints it over events 2-10, 11-50, 51-100, 101-150
and 151-300.  docs/krls.md, section 9.

    python bench/krls_short.py
    python bench/krls_short.py --windows --learners "MultiKernelRegressor()" \\
        "MultiKernelRegressor(sleep=None)" "KernelRLSRegressor()"

--learners takes Python expressions of okl's learners (evaluated with KernelRLSRegressor and
MultiKernelRegressor in scope), or "river LinearRegression" / "river KNN".
"""
import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes, make_friedman1, make_friedman2, make_regression

from okl import KernelRLSRegressor, MultiKernelRegressor
from okl.pipeline import StreamPipeline
from okl.preprocessing import OnlineStandardScaler

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from krls_defaults import okl_scores, river_learners, river_scores  # noqa: E402

N = 300
WINDOWS = ((1, 150), (1, 10), (10, 50), (50, 100), (100, 150), (150, 300))
SEEDS = range(5)
LEARNERS = ("MultiKernelRegressor()", "KernelRLSRegressor()",
            "MultiKernelRegressor(learner='sgd')", "river LinearRegression", "river KNN")


def streams():
    """name -> (X, y): N events each, before the shuffle."""
    rng = np.random.default_rng(0)
    X, y = load_diabetes(return_X_y=True)
    out = {"diabetes": (X, y)}
    out["friedman1"] = make_friedman1(N, 10, noise=1.0, random_state=0)
    out["friedman2"] = make_friedman2(N, noise=10.0, random_state=0)
    X, y = make_regression(N, 8, n_informative=8, noise=5.0, random_state=0)
    out["linear"] = (X, y + 50.0)
    x = rng.uniform(-3, 3, N)
    out["sine"] = (x[:, None], np.sin(2 * x) + (0.1 + 0.25 * np.abs(x)) * rng.standard_normal(N))
    return out


def scores(label, X, y):
    """Progressive predictions of one learner, one event at a time through its scaler."""
    if label.startswith("river"):
        return river_scores(river_learners()[label](), X, y)
    est = eval(label, {"KernelRLSRegressor": KernelRLSRegressor,
                       "MultiKernelRegressor": MultiKernelRegressor})
    return okl_scores(StreamPipeline([("scale", OnlineStandardScaler()), ("learn", est)]), X, y)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", nargs="*", default=None)
    parser.add_argument("--learners", nargs="*", default=list(LEARNERS))
    parser.add_argument("--windows", action="store_true",
                        help="also the RMSE over events 2-10, 11-50, 51-100, 101-150, 151-300")
    args = parser.parse_args(argv)
    data = streams()
    names = args.streams or list(data)
    warnings.simplefilter("ignore")
    windows = WINDOWS if args.windows else WINDOWS[:1]
    table = {}
    for label in args.learners:
        for name in names:
            X, y = data[name]
            rmse, cost = [], 0.0
            for seed in SEEDS:
                order = np.random.default_rng(seed).permutation(len(y))[:N]
                start = time.process_time()
                pred = scores(label, X[order], y[order])
                cost += time.process_time() - start
                err = (pred - y[order]) ** 2
                rmse.append([np.sqrt(np.mean(err[a:b])) for a, b in windows])
            table[label, name] = np.mean(rmse, axis=0)
            print(label, name, np.round(table[label, name], 3).tolist(),
                  f"({cost / len(SEEDS) / N * 1e6:.0f} us)", flush=True)
    for j, (a, b) in enumerate(windows):
        print(f"\nprogressive RMSE over events {a + 1}-{b}, mean of {len(SEEDS)} shuffles")
        print("| learner | " + " | ".join(names) + " |")
        print("|" + "---|" * (len(names) + 1))
        for label in args.learners:
            print(f"| {label} | " + " | ".join(f"{table[label, n][j]:.3g}" for n in names) + " |")


if __name__ == "__main__":
    main()
