"""Shen and Dietterich's drifting-concept experiment (Section 4) on scikit-learn's digits.
=======================================================================================

The paper's USPS roles on the 8x8 digits (features scaled to [0, 1]): P1 = 3,
P2 = 7 (positive), N1 = 8, N2 = 9 (negative).  `okl.synth.drifting_phases`
draws four phases of 500 samples whose class probabilities move from P1/N1 to
P2/N2, so that what separated 3 from 8 must be unlearned for 7 against 9.
Each method predicts every sample before learning it (progressive
validation).  As in the paper, each method's parameter is tuned on phases 1-2
(the lowest online error there) and the model trained on phases 1-2 goes on
learning through phases 3-4, where the cumulative online error is reported;
all averaged over independent trials (40 in the paper).

Methods: PA (Crammer et al.), NORMA with the linear kernel
(okl.OnlineKernelClassifier, hinge loss), and the three regularized PA of the
paper: objective-regularized (eq. 3.1), L2-constrained (eq. 3.9) and
L1-constrained (eq. 3.10), all okl.RegularizedPAClassifier.

A second table gives the phase 3-4 error of every setting of each grid:
tuning on the nearly stationary phases 1-2 favours weak regularization,
while the drift of phases 3-4 rewards a stronger one.

Figure 1: cumulative error rate over phases 3-4.  Figure 2: feature selection
(Section 3.3): with each trial's tuned beta, truncation at several sigma; the
error over phases 3-4 against the average number of nonzero weights (out of
64), for the L2 and L1 constraints and, for reference, plain PA.

Run:  python examples/shen_dietterich_drift.py [--trials 40] [--out drift.png] [--quick]
(--workers N or --scheduler ADDRESS: the trials run on Dask, same results)
"""
import argparse
import time
import warnings
from functools import partial

import numpy as np
from sklearn.datasets import load_digits

from okl import OnlineKernelClassifier, RegularizedPAClassifier
from okl.distributed import map_trials
from okl.evaluation import progressive_validation
from okl.passive_aggressive import InfeasibleUpdateWarning
from okl.synth import drifting_phases

ROLES = (3, 7, 8, 9)          # P1, P2, N1, N2: the paper's USPS digits
METHODS = {                   # name: (estimator class, fixed parameters, tuning grid)
    "PA": (RegularizedPAClassifier, {}, [{}]),
    "NORMA": (OnlineKernelClassifier, dict(kernel="linear", loss="hinge"),
              [dict(lam=lam, eta_decay=decay) for lam in (1e-4, 1e-3, 1e-2, 1e-1)
               for decay in (0.0, 0.5)]),
    "objective": (RegularizedPAClassifier, dict(regularization="objective"),
                  [dict(alpha=a) for a in (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1)]),
    "L2": (RegularizedPAClassifier, dict(regularization="l2"),
           [dict(beta=b) for b in (1.0, 1.5, 2.0, 3.0, 5.0, 8.0)]),
    "L1": (RegularizedPAClassifier, dict(regularization="l1"),
           [dict(beta=b) for b in (2.0, 3.0, 5.0, 8.0, 12.0, 20.0, 30.0)]),
}
SIGMAS = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.02, 0.03, 0.04, 0.05)
TRUNCATED = ("PA", "L2", "L1")
CLASSES = np.array([-1, 1])


def digits():
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


def mistakes(est, X, y):
    """Predict-then-learn mistakes of an estimator over the whole stream."""
    return progressive_validation(est, X, y, classes=CLASSES).predictions != y


def run_trial(X, y, seed, n_per_phase):
    """{method: (tuned params, its mistakes over the stream, phase 3-4 error of every
    setting of the grid)}: tuned on phases 1-2."""
    Xs, ys = drifting_phases(X, y, ROLES, n_per_phase, random_state=seed)
    half = 2 * n_per_phase
    out = {}
    for method, (cls, fixed, grid) in METHODS.items():
        runs = [mistakes(cls(**fixed, **params), Xs, ys) for params in grid]
        best = int(np.argmin([m[:half].mean() for m in runs]))
        out[method] = (grid[best], runs[best], [m[half:].mean() for m in runs])
    return out


def trial(seed, X, y, n_per_phase):
    """`run_trial` and each tuned method's `feature_curve`: one independent trial."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleUpdateWarning)   # counted, and rare here
        out = run_trial(X, y, seed, n_per_phase)
        curves = {method: feature_curve(method, out[method][0], X, y, seed, n_per_phase)
                  for method in TRUNCATED}
    return out, curves


def feature_curve(method, params, X, y, seed, n_per_phase, chunk=20):
    """(error over phases 3-4, mean number of nonzero weights there) for each sigma."""
    Xs, ys = drifting_phases(X, y, ROLES, n_per_phase, random_state=seed)
    half = 2 * n_per_phase
    cls, fixed, _ = METHODS[method]
    curve = []
    for sigma in SIGMAS:
        est = cls(**fixed, **params, truncate_sigma=sigma)
        progressive_validation(est, Xs[:half], ys[:half], classes=CLASSES)
        wrong, kept = 0, []
        for lo in range(half, len(ys), chunk):
            result = progressive_validation(est, Xs[lo:lo + chunk], ys[lo:lo + chunk])
            wrong += np.sum(result.predictions != ys[lo:lo + chunk])
            kept.append(np.count_nonzero(est.coef_))
        curve.append((wrong / (len(ys) - half), np.mean(kept)))
    return np.array(curve)


def late_errors(wrong, half):
    """From the trials' mistakes (one row a trial): each trial's error over phases 3-4 (from
    event `half` on), its 95 % interval's half-width, and the mean cumulative error rate
    over phases 3-4."""
    late = wrong[:, half:].mean(axis=1)
    ci = 1.96 * late.std(ddof=1) / np.sqrt(len(late)) if len(late) > 1 else 0.0
    curve = (np.cumsum(wrong[:, half:], axis=1)
             / np.arange(1, wrong.shape[1] - half + 1)).mean(axis=0)
    return late, ci, curve


def setting(params):
    return ", ".join(f"{k}={v:g}" for k, v in sorted(params.items())) or "-"


def describe(choices):
    """The most frequent tuned setting and how often it won."""
    names = [setting(c) for c in choices]
    best = max(dict.fromkeys(names), key=names.count)     # ties: the first seen, every run
    return best if best == "-" else f"{best} ({names.count(best)}/{len(names)})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 trials (a few seconds)")
    parser.add_argument("--trials", type=int, default=None, help="default 40 (4 with --quick)")
    parser.add_argument("--n-per-phase", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="shen_dietterich_drift.png", help="Figure 1 PNG")
    parser.add_argument("--out-features", default="shen_dietterich_features.png",
                        help="Figure 2 PNG")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the trials on this Dask scheduler (pip install 'okl[dask]')")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="run the trials on a local Dask cluster of N worker processes")
    args = parser.parse_args(argv)
    args.trials = args.trials or (4 if args.quick else 40)
    X, y = digits()
    n, half = args.n_per_phase, 2 * args.n_per_phase
    start = time.perf_counter()
    seeds = [args.seed + k for k in range(args.trials)]      # the same seeds with or without Dask
    done = map_trials(partial(trial, X=X, y=y, n_per_phase=n), seeds,
                      args.scheduler or ("sequential" if args.workers is None else None),
                      n_workers=args.workers)
    trials = [done[s][0] for s in seeds]
    print(f"Shen-Dietterich Section 4 on digits {ROLES} (P1, P2, N1, N2), {args.trials} trials "
          f"of 4 x {n} samples, features / 16; tuned on phases 1-2 ({time.perf_counter() - start:.0f} s)")
    print(f"{'method':<10} {'tuned setting (times chosen)':<32} {'error 1-2':>10} "
          f"{'error 3-4 (mean +- 95% CI)':>28}")
    curves = {}
    for method in METHODS:
        chosen = [t[method][0] for t in trials]
        wrong = np.array([t[method][1] for t in trials], dtype=float)
        early = wrong[:, :half].mean(axis=1)
        late, ci, curves[method] = late_errors(wrong, half)
        print(f"{method:<10} {describe(chosen):<32} {early.mean():>10.4f} "
              f"{late.mean():>19.4f} +- {ci:.4f}")
    print("\nError over phases 3-4 at every setting of the grid (mean over trials), untuned:")
    for method, (_, _, grid) in METHODS.items():
        late = np.mean([t[method][2] for t in trials], axis=0)
        print(f"{method:<10} " + "; ".join(f"{setting(p)}: {e:.4f}" for p, e in zip(grid, late)))

    features = {method: np.array([done[s][1][method] for s in seeds]) for method in TRUNCATED}
    print("\nFeature selection: truncation after each update (Section 3.3), each trial's tuned "
          "beta; error over phases 3-4 / mean number of nonzero weights of 64")
    print(f"{'sigma':>8} " + " ".join(f"{m:>18}" for m in TRUNCATED))
    for j, sigma in enumerate(SIGMAS):
        cells = [f"{features[m][:, j, 0].mean():.4f} / {features[m][:, j, 1].mean():5.1f}"
                 for m in TRUNCATED]
        print(f"{sigma:>8g} " + " ".join(f"{c:>18}" for c in cells))
    plot(curves, features, n, args.trials, args.out, args.out_features)


def pyplot():
    """matplotlib.pyplot drawing to files (Agg), or None, said, when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib).")
        return None
    return plt


def cumulative_figure(plt, curves, title, figsize=(6.4, 4.4), **legend):
    """Figure 1's kind: each method's cumulative error rate over phases 3-4."""
    fig, ax = plt.subplots(figsize=figsize)
    for method, curve in curves.items():
        ax.plot(np.arange(1, len(curve) + 1), curve, label=method)
    ax.set(xlabel="instances of phases 3-4", ylabel="cumulative error rate", xscale="log",
           title=title)
    ax.legend(**legend)
    fig.tight_layout()
    return fig


def plot(curves, features, n, n_trials, out, out_features):
    plt = pyplot()
    if plt is None:
        return
    fig = cumulative_figure(
        plt, curves, f"Drifting digits 3,7 vs 8,9: {n_trials} trials (cf. Shen-Dietterich Fig. 1)")
    fig.savefig(out, dpi=120)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for method, curve in features.items():
        error, kept = curve[:, :, 0], curve[:, :, 1]
        ci = 1.96 * error.std(axis=0) / np.sqrt(len(error))
        ax.errorbar(kept.mean(axis=0), error.mean(axis=0), yerr=ci, marker="o", capsize=3,
                    label=method + (" (no regularization)" if method == "PA" else " constraint"))
    ax.set(xlabel="mean number of nonzero weights (of 64)", ylabel="error over phases 3-4",
           yscale="log", title="Truncation of the smallest weights (cf. Fig. 2), 95% CI")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_features, dpi=120)
    print(f"plots written to {out} and {out_features}")


if __name__ == "__main__":
    main()
