"""Tian-Sheng's hinge-loss example (Corollary 3) on the breast cancer data set.
============================================================================

Coefficient-regularized online classification, eq. (0.4), with the hinge loss:
m fixed centres (the first m stream points), ``lam = T**-gamma`` for a stream of
T samples and the polynomial steps ``eta_t = t**-theta / (2 + kappa^2)`` of
Corollary 3, with the corrected kappa = sup_x ||k(x)||_2 (docs/algorithms.md, section 4).
For a regularity beta of the target and a small epsilon the corollary takes

    theta = (2 beta + 1) / (2 (beta + 1)) - (2 beta + 1) epsilon / beta,
    gamma = 1 / (2 (beta + 1)) - epsilon / beta,

and bounds the excess misclassification error by O(T**(epsilon - beta / (2 (beta + 1)))).

The stream draws T samples independently and uniformly from a training split
(the paper's i.i.d. setting, rho = the empirical distribution); the error of
sgn(f_{a_{T+1}}) is measured on the held-out split, averaged over repetitions
with fresh splits and streams.  A second column runs the same stream with
okl's eta="auto" (the corrected step of docs/algorithms.md, section 4), and the batch RBF
SVM on the same training split is printed as a reference.  The online error
levels off above it: m = 50 centres and lam = T**-gamma (still 0.125 at
T = 32768) keep the regularization error D(lam) of the paper's decomposition.

Run:  python examples/tian_sheng_hinge.py [--out tian_sheng_hinge.png] [--quick]
(--workers N or --scheduler ADDRESS: the repetitions run on Dask, same results)
"""
import argparse
import time
from functools import partial

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from okl import CoefficientRegularizedClassifier
from okl.distributed import map_trials
from okl.kernels import kernel_matrix


def corollary3_exponents(beta, epsilon):
    """(theta, gamma) of Corollary 3; needs 0 < epsilon < beta / (2 (beta + 1))."""
    if not 0 < epsilon < beta / (2 * (beta + 1)):
        raise ValueError(f"Corollary 3 needs 0 < epsilon < {beta / (2 * (beta + 1)):.3g}.")
    theta = (2 * beta + 1) / (2 * (beta + 1)) - (2 * beta + 1) * epsilon / beta
    gamma = 1 / (2 * (beta + 1)) - epsilon / beta
    return theta, gamma


def split(r, Ts, n_centers, theta, gamma_T, seed):
    """One repetition (split and stream seeded by seed + r): the test errors at every T
    for Corollary 3's steps and for eta="auto", and the batch SVM's error."""
    X, y = load_breast_cancer(return_X_y=True)
    kernel_gamma = 1.0 / X.shape[1]
    errors = {"corollary 3": np.empty(len(Ts)), "auto": np.empty(len(Ts))}
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=seed + r)
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    svm = SVC(gamma=kernel_gamma).fit(X_train, y_train)
    svm_error = np.mean(svm.predict(X_test) != y_test)
    idx = np.random.default_rng(seed + r).integers(0, len(X_train), max(Ts))
    centers = X_train[idx[:n_centers]]
    # the corrected kappa^2 = sup_x ||k(x)||^2 over the support of rho
    kappa2 = np.max(np.sum(kernel_matrix(X_train, centers, gamma=kernel_gamma) ** 2, axis=1))
    for j, T in enumerate(Ts):
        common = dict(n_centers=n_centers, gamma=kernel_gamma, loss="hinge",
                      lam=T ** -gamma_T, eta_decay=theta)
        for name, eta in (("corollary 3", 1.0 / (2.0 + kappa2)), ("auto", "auto")):
            clf = CoefficientRegularizedClassifier(eta=eta, **common)
            clf.fit(X_train[idx[:T]], y_train[idx[:T]])
            errors[name][j] = 1.0 - clf.score(X_test, y_test)
    return errors, svm_error


def run(Ts, n_centers=50, beta=1.0, epsilon=0.05, repeats=20, seed=0, client="sequential",
        n_workers=None):
    """Test errors, shape (len(Ts), repeats), for Corollary 3's steps and for eta="auto".

    The repetitions run in this process, or on Dask (`okl.distributed.map_trials`)
    with the same seeds and so the same results.
    """
    theta, gamma_T = corollary3_exponents(beta, epsilon)
    out = map_trials(partial(split, Ts=Ts, n_centers=n_centers, theta=theta, gamma_T=gamma_T,
                             seed=seed), range(repeats), client, n_workers=n_workers)
    errors = {name: np.stack([out[r][0][name] for r in range(repeats)], axis=1)
              for name in ("corollary 3", "auto")}
    svm_errors = [out[r][1] for r in range(repeats)]
    return errors, float(np.mean(svm_errors)), theta, gamma_T


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="T up to 2^12, 4 repeats")
    parser.add_argument("--out", default="tian_sheng_hinge.png", help="PNG path")
    parser.add_argument("--beta", type=float, default=1.0)
    parser.add_argument("--epsilon", type=float, default=0.05)
    parser.add_argument("--centers", type=int, default=50, help="m")
    parser.add_argument("--repeats", type=int, default=None, help="default 20 (4 with --quick)")
    parser.add_argument("--max-log2-T", type=int, default=None,
                        help="the longest stream is 2^this (default 15, 12 with --quick)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the repetitions on this Dask scheduler (pip install 'okl[dask]')")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="run the repetitions on a local Dask cluster of N worker processes")
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (4 if args.quick else 20)
    args.max_log2_T = args.max_log2_T or (12 if args.quick else 15)
    Ts = 2 ** np.arange(6, args.max_log2_T + 1)
    start = time.perf_counter()
    errors, svm_error, theta, gamma_T = run(
        Ts, args.centers, args.beta, args.epsilon, args.repeats,
        client=args.scheduler or ("sequential" if args.workers is None else None),
        n_workers=args.workers)
    rate = args.epsilon - args.beta / (2 * (args.beta + 1))
    print(f"Tian-Sheng Corollary 3, hinge loss, breast cancer (569 x 30), m = {args.centers} "
          f"centres, Gaussian kernel gamma = 1/30")
    print(f"beta = {args.beta:g}, epsilon = {args.epsilon:g}: theta = {theta:.3f}, "
          f"lam = T^-{gamma_T:.3f}; the corollary's rate is T^{rate:.3f}")
    print(f"test misclassification error of sgn(f_(a_(T+1))), mean +- s.d. over "
          f"{args.repeats} splits and streams")
    print(f"{'T':>7} {'lam':>8} {'corollary 3 steps':>20} {'eta=auto':>18}")
    for j, T in enumerate(Ts):
        cells = [f"{errors[name][j].mean():.4f} +- {errors[name][j].std():.4f}"
                 for name in ("corollary 3", "auto")]
        print(f"{T:>7} {T ** -gamma_T:>8.4f} {cells[0]:>20} {cells[1]:>18}")
    print(f"batch RBF SVM on the training split (reference): {svm_error:.4f}")
    slopes = {name: np.polyfit(np.log(Ts), np.log(e.mean(axis=1)), 1)[0]
              for name, e in errors.items()}
    print("log-log slope of the error against T: "
          + ", ".join(f"{name} {s:.3f}" for name, s in slopes.items())
          + f"  ({time.perf_counter() - start:.1f} s)")
    plot(Ts, errors, svm_error, theta, gamma_T, rate, args.out)


def plot(Ts, errors, svm_error, theta, gamma_T, rate, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib).")
        return

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    labels = {"corollary 3": rf"$\eta_t = t^{{-{theta:.2f}}}/(2+\kappa^2)$ (Corollary 3)",
              "auto": 'eta="auto" (corrected step)'}
    for (name, e), marker in zip(errors.items(), "os"):
        mean, sem = e.mean(axis=1), e.std(axis=1) / np.sqrt(e.shape[1])
        ax.plot(Ts, mean, marker=marker, label=labels[name])
        ax.fill_between(Ts, mean - sem, mean + sem, alpha=0.2)
    first = errors["corollary 3"].mean(axis=1)[0]
    ax.plot(Ts, first * (Ts / Ts[0]) ** rate, ":", color="black",
            label=rf"the corollary's rate $T^{{{rate:.2f}}}$")
    ax.axhline(svm_error, color="gray", linestyle="--", label="batch RBF SVM")
    ax.set(xscale="log", yscale="log", xlabel="stream length T",
           ylabel="test misclassification error (mean $\\pm$ s.e.)",
           title=rf"Tian-Sheng, hinge loss, $\lambda = T^{{-{gamma_T:.2f}}}$, breast cancer")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"plot written to {out}")


if __name__ == "__main__":
    main()
