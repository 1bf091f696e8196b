"""The accuracy/cost frontier of bounded kernel models (docs/budget.md).
=====================================================================

On two streams, digits (odd vs even, hinge loss, 3 shuffled passes) and
make_friedman1 (squared loss, 20 000 samples), it runs the same pointwise rule
(NORMA / Smale-Yao, Gaussian kernel) unbudgeted, with budgets B under the
"oldest", "smallest" and "merge" (BSGD) policies, and on D random Fourier
features (FOGD) and B Nystroem landmarks (NOGD: exact until B centres, then
the linear model on their features).  It prints the table (progressive error,
microseconds per step, memory) and plots error and time per step against the
model size.

References: Wang, Crammer and Vucetic, JMLR 13, 2012; Rahimi and Recht,
NIPS 2007; Lu, Hoi, Wang, Zhao and Liu, JMLR 17, 2016.

Run:  python examples/budget_frontier.py [--out budget_frontier.png] [--quick]
"""
import argparse
import time

import numpy as np
from sklearn.datasets import load_digits, make_friedman1
from sklearn.preprocessing import StandardScaler

from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl.evaluation import progressive_validation


def streams(quick):
    rng = np.random.default_rng(0)
    X, y = load_digits(return_X_y=True)
    X, y = StandardScaler().fit_transform(X), np.where(y % 2, 1.0, -1.0)
    idx = np.concatenate([rng.permutation(len(y)) for _ in range(1 if quick else 3)])
    Xf, yf = make_friedman1(4000 if quick else 20_000, n_features=10, noise=1.0, random_state=0)
    yf = (yf - yf.mean()) / yf.std()
    return {
        "digits": (np.ascontiguousarray(X[idx]), y[idx], "classification",
                   dict(gamma=0.02, lam=1e-4, eta_decay=0.5)),
        "friedman": (np.ascontiguousarray(Xf), yf, "regression",
                     dict(gamma=0.5, lam=1e-3, eta_decay=0.6)),
    }


def run(X, y, task, p, **kw):
    """(progressive error, microseconds per step) of one learner on the stream."""
    cls = OnlineKernelClassifier if task == "classification" else OnlineKernelRegressor
    est = cls(gamma=p["gamma"], lam=p["lam"], eta_decay=p["eta_decay"], **kw)
    fit_kw = {"classes": np.array([-1.0, 1.0])} if task == "classification" else {}
    t0 = time.perf_counter()
    res = progressive_validation(est, X, y, chunk_size=2048, **fit_kw)
    return float(res.error[-1]), (time.perf_counter() - t0) / len(y) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--out", default="budget_frontier.png")
    parser.add_argument("--quick", action="store_true", help="shorter streams, fewer sizes")
    args = parser.parse_args()
    budgets = [25, 100] if args.quick else [25, 50, 100, 200]
    components = [100, 500] if args.quick else [100, 200, 500, 1000]
    results = {}
    print("| stream | model | size | progressive error | us/step | memory (KiB) |")
    print("|---|---|---|---|---|---|")
    for name, (X, y, task, p) in streams(args.quick).items():
        d = X.shape[1]
        rows = results[name] = {}
        err, us = run(X, y, task, p)
        rows["exact"] = [(None, err, us)]
        print(f"| {name} | exact | - | {err:.4f} | {us:.1f} | grows |", flush=True)
        for policy in ("oldest", "smallest", "merge"):
            for B in budgets:
                err, us = run(X, y, task, p, budget=B, budget_policy=policy)
                rows.setdefault(policy, []).append((B, err, us))
                print(f"| {name} | {policy} | {B} | {err:.4f} | {us:.1f} | "
                      f"{(B + 1) * (d + 2) * 8 / 1024:.1f} |", flush=True)
        for approximation, sizes in (("fourier", components), ("nystroem", budgets)):
            for size in sizes:
                err, us = run(X, y, task, p, approximation=approximation, n_components=size,
                              random_state=0)
                rows.setdefault(approximation, []).append((size, err, us))
                mem = size * (d + 2) if approximation == "fourier" else size * (d + size)
                print(f"| {name} | {approximation} | {size} | {err:.4f} | {us:.1f} | "
                      f"{mem * 8 / 1024:.1f} |", flush=True)
    plot(results, args.out)


def plot(results, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'okl[plot]').")
        return
    fig, axes = plt.subplots(2, len(results), figsize=(5.5 * len(results), 8), squeeze=False)
    for col, (name, rows) in enumerate(results.items()):
        exact_err, exact_us = rows["exact"][0][1:]
        for key, style in (("oldest", "s-"), ("smallest", "^-"), ("merge", "o-"),
                           ("fourier", "x--"), ("nystroem", "d--")):
            size, err, us = map(np.array, zip(*rows[key]))
            axes[0, col].plot(size, err, style, label=key)
            axes[1, col].plot(size, us, style, label=key)
        axes[0, col].axhline(exact_err, color="k", lw=1, label="unbudgeted")
        axes[1, col].axhline(exact_us, color="k", lw=1, label="unbudgeted")
        axes[0, col].set(title=name, xscale="log", ylabel="progressive error")
        axes[1, col].set(xscale="log", yscale="log", xlabel="budget B / components D",
                         ylabel="microseconds per step")
        for ax in axes[:, col]:
            ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axes[0, col].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
