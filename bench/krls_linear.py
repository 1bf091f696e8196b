"""Why the KRLS pool's linear learner does not win the linear stream of bench/krls_defaults.py.

The rows of the tabular streams go through an online standard scaler, so row t is scaled by the
moments of rows 1..t.  A linear model whose posterior never forgets fits one map to rows scaled
by moments that keep moving (their error shrinks as 1/sqrt(t) through the whole stream).  This
script scales the rows by the moments of the rows so far, frozen after `--freeze` events (the
stream's end: never frozen, the protocol of bench/krls_defaults.py), and gives the progressive
RMSE of the last 20% of the linear KRLS learner alone, of it with forgetting, and of
MultiKernelRegressor(learner="krls") with the final weight of its linear learner.

    python bench/krls_linear.py
    python bench/krls_linear.py --freeze 3000 100 500 --forgetting 1.0 0.999
"""
import argparse
import sys
import time
import warnings

import numpy as np

from okl import KernelRLSRegressor, MultiKernelRegressor

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from krls_defaults import streams  # noqa: E402


def scaled(X, freeze):
    """Row t scaled by the mean and standard deviation of rows 1..min(t, freeze)."""
    Z = np.empty_like(X)
    for i in range(len(X)):
        head = X[:min(i + 1, freeze)]
        s = head.std(0)
        Z[i] = (X[i] - head.mean(0)) / np.where(s > 0, s, 1.0)
    return Z


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stream", default="linear")
    parser.add_argument("--freeze", nargs="*", type=int, default=[3000, 100, 500])
    parser.add_argument("--forgetting", nargs="*", type=float, default=[1.0, 0.999])
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    X, y, _ = streams()[args.stream]
    last = int(0.8 * len(y))
    print("| frozen after | learner | RMSE, last 20% | linear weight | us/event |")
    print("|---|---|---|---|---|")
    for freeze in args.freeze:
        Z = scaled(X, freeze)
        learners = {f"linear KRLS, forgetting={f:g}": KernelRLSRegressor(
            kernel="linear", gamma=1.0, coef0=1.0, forgetting=f) for f in args.forgetting}
        learners["MultiKernelRegressor(learner='krls')"] = MultiKernelRegressor(learner="krls")
        for label, est in learners.items():
            start = time.process_time()
            pred = est._progressive_scores(Z, y, reset=True)
            cost = (time.process_time() - start) / len(y) * 1e6
            rmse = np.sqrt(np.mean((pred[last:] - y[last:]) ** 2))
            weight = f"{est.weights_[-1]:.3f}" if hasattr(est, "learners_") else "-"
            print(f"| {freeze} | {label} | {rmse:.3f} | {weight} | {cost:.0f} |", flush=True)


if __name__ == "__main__":
    main()
