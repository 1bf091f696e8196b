"""Lin, Lei, Zhang and Zhou, Section 2: online linear ranking with the hinge loss.
===============================================================================

The paper runs Algorithm 1 on the Boston housing data (no longer shipped by
scikit-learn); this script uses scikit-learn's diabetes data (442 samples, 10
features) in its place, with everything else as in the paper:

* rho is the uniform distribution on the data set: each repeat draws a stream
  of T samples from it with replacement;
* r(y, y') = sign(y - y'), V(r, a) = (1 - r a)_+, the linear pair kernel
  K((x, x'), (u, u')) = (x - x').(u - u'), so f = w.(x - x');
* eta_t = (t - 1)^-theta for theta in {0, 2/3, 1};
* after t samples, f is scored over all pairs of the data set: the ranking
  error L(f) = P[sign(y - y') f(x, x') < 0] and the generalization error
  E(f) = E[(1 - sign(y - y') f(x, x'))_+].

The features are standardized: with diabetes' own scaling (columns of unit
norm) ||x - x'|| is about 0.1 and every schedule barely moves in T steps.
Every theta sees the same streams, so the comparison is paired.

Run:  python examples/lin_pairwise_ranking.py [--repeats 400] [--steps 2000] [--quick]
(about 7 minutes for the paper's 400 repeats on one core, mostly scoring all
pairs 24 times per stream; --repeats 40 gives the same picture in 40 s).
With --workers N (a local Dask cluster) or --scheduler ADDRESS the repeats run
in parallel, with identical results.
It prints a table, says whether theta = 2/3 wins, and writes
lin_pairwise_ranking.png (the two panels of the paper's Figure 1).
"""
import argparse
import time
from functools import partial

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.preprocessing import StandardScaler

from okl import PairwiseLearner
from okl.distributed import map_trials
from okl.evaluation import pairwise_generalization_error, ranking_error

THETAS = {"0": 0.0, "2/3": 2.0 / 3.0, "1": 1.0}


def checkpoints(steps, count=24):
    """Roughly log-spaced sample counts from 10 to `steps`."""
    return np.unique(np.geomspace(10, steps, count).astype(int))


def repeat(stream, X, y, ts):
    """Ranking and generalization errors of one stream, shape (theta, checkpoint) each."""
    rank = np.empty((len(THETAS), len(ts)))
    gen = np.empty_like(rank)
    for k, theta in enumerate(THETAS.values()):
        est = PairwiseLearner(reducer="sign", loss="hinge", pair_kernel="linear",
                              eta=1.0, theta=theta)
        done = 0
        for c, t in enumerate(ts):
            rows = stream[done:t]
            est.partial_fit(X[rows], y[rows])
            done = t
            rank[k, c] = ranking_error(est, X, y)
            gen[k, c] = pairwise_generalization_error(est, X, y)
    return rank, gen


def run(repeats=400, steps=2000, seed=0, client="sequential", n_workers=None):
    """Mean ranking and generalization errors, shape (theta, repeat, checkpoint).

    The repeats run in this process, or on Dask (`okl.distributed.map_trials`)
    with the same streams and so the same results.
    """
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    ts = checkpoints(steps)
    rng = np.random.default_rng(seed)
    streams = {rep: rng.integers(0, len(X), steps) for rep in range(repeats)}
    out = map_trials(partial(repeat, X=X, y=y, ts=ts), streams, client, n_workers=n_workers)
    rank = np.stack([out[rep][0] for rep in range(repeats)], axis=1)
    gen = np.stack([out[rep][1] for rep in range(repeats)], axis=1)
    return ts, rank, gen


def report(ts, rank, gen):
    names = list(THETAS)
    n = rank.shape[1]
    print(f"\nMean over {n} streams (diabetes, linear ranking, hinge, eta_t = (t-1)^-theta)")
    head = " ".join(f"{'rank θ=' + k:>11}" for k in names) + "  " + \
        " ".join(f"{'gen θ=' + k:>11}" for k in names)
    print(f"{'t':>6} {head}")
    for c, t in enumerate(ts):
        r = " ".join(f"{rank[k, :, c].mean():>11.4f}" for k in range(len(names)))
        g = " ".join(f"{gen[k, :, c].mean():>11.4f}" for k in range(len(names)))
        print(f"{t:>6} {r}  {g}")
    best = names.index("2/3")
    print(f"\nAt t = {ts[-1]}: paired differences (other theta - 2/3), mean ± 2 standard errors")
    verdict = True
    for k, name in enumerate(names):
        if k == best:
            continue
        for label, err in (("ranking error", rank), ("generalization error", gen)):
            diff = err[k, :, -1] - err[best, :, -1]
            half = 2 * diff.std(ddof=1) / np.sqrt(n) if n > 1 else 0.0
            wins = diff.mean() - half > 0
            verdict &= wins
            print(f"  theta={name:>3} {label:<21} {diff.mean():+.4f} ± {half:.4f}  "
                  f"{'2/3 better' if wins else 'not significant or worse'}")
    print(f"theta = 2/3 wins on both errors against both schedules: {'yes' if verdict else 'no'}")
    return verdict


def plot(ts, rank, gen, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'okl[plot]').")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, err, title in ((axes[0], rank, "Ranking error"),
                           (axes[1], gen, "Generalization error (hinge)")):
        for k, name in enumerate(THETAS):
            mean = err[k].mean(axis=0)
            se = err[k].std(axis=0, ddof=1) / np.sqrt(err.shape[1]) if err.shape[1] > 1 else 0
            ax.plot(ts, mean, marker="o", ms=3, label=f"θ = {name}")
            ax.fill_between(ts, mean - 2 * se, mean + 2 * se, alpha=0.2)
        ax.set(xscale="log", xlabel="iterations t", title=title)
        ax.legend()
    fig.suptitle(f"Algorithm 1 on diabetes, eta_t = (t-1)^-θ, {rank.shape[1]} repeats")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"figure written to {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 repeats (a few seconds)")
    parser.add_argument("--repeats", type=int, default=None, help="default 400 (20 with --quick)")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="lin_pairwise_ranking.png")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the repeats on this Dask scheduler (pip install 'okl[dask]')")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="run the repeats on a local Dask cluster of N worker processes")
    args = parser.parse_args()
    args.repeats = args.repeats or (20 if args.quick else 400)
    start = time.perf_counter()
    ts, rank, gen = run(args.repeats, args.steps, args.seed,
                        args.scheduler or ("sequential" if args.workers is None else None),
                        args.workers)
    print(f"{args.repeats} repeats in {time.perf_counter() - start:.1f} s")
    report(ts, rank, gen)
    plot(ts, rank, gen, args.out)


if __name__ == "__main__":
    main()
