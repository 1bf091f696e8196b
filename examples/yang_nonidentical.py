"""Yang's non-identical sampling: the error of fully online quantile regression against b.
=======================================================================================

Yang's Theorem 2.1 bounds the error of the fully online algorithm (eq. (1.6))
when the marginal of x_t converges to rho_X at rate t^-b (eq. (1.1)).  For the
regularity index r = 1, with lam_t = lam t^-1/5 and eta_t ~ t^-3/5
(`okl.schedules.yang_exponents`), eq. (2.2) reads

    E ||f_(T+1) - f_rho||_(L2(rho_X)) <= C T^-min(1/5, b/2 - 1/5),

so b <= 2/5 is not covered, 2/5 < b < 4/5 slows the rate, and b >= 4/5 gives
the i.i.d. rate 1/5.

The streams are `okl.synth.nonidentical`: x_t is drawn from
(1 - w_t) rho_X + w_t nu with w_t = min(1, c t^-b), rho_X uniform on [0, 1],
nu uniform on [0, 0.2], and y | x uniform on [f(x) - 1, f(x) + 1] with
f(x) = sin(2 pi x) (the paper's test setting), so the target is the
tau-quantile f(x) - 1 + 2 tau.  c = 1 starts the stream in nu; c = 4 keeps it
there for the first 4^(1/b) steps.  For each b, c and seed, one learner runs
through the stream and its L2(rho_X) distance to the target is measured on a
fixed grid of 513 points at T = 2^6, ..., 2^13.  Seed s gives every (b, c) the
same rho_X draws, nu draws and noise (`nonidentical` shares them), so the
curves differ only by the mixture.

Slopes are fitted per seed on log-log axes over the last decade of T and given
as mean +- standard error over seeds; final errors likewise.

Run:  python examples/yang_nonidentical.py [--quick] [--out yang_nonidentical.png]
(about a minute on an idle 2-core machine; --quick: a few seconds)
"""
import argparse
import time

import numpy as np

from okl import OnlineKernelRegressor
from okl._progress import progress
from okl.schedules import yang_exponents
from okl.synth import conditional_quantile, mixture_weight, nonidentical


def theorem_exponent(b, r=1.0):
    """The exponent of T in Yang's eq. (2.2), 1/2 < r <= 1: min(r/(3r+2), b/2 - 1/(3r+2))."""
    return min(r / (3 * r + 2), b / 2 - 1 / (3 * r + 2))


def run(bs, cs, Ts, seeds, tau=0.5, kernel_gamma=20.0, lam=0.1, n_grid=513):
    """L2(rho_X) errors, {(b, c): array of shape (seeds, len(Ts))}; b = inf once, as (inf, None)."""
    lam_decay, eta_decay = yang_exponents(1.0)
    grid = np.linspace(0.0, 1.0, n_grid)[:, None]
    target = conditional_quantile(grid, tau)
    configs = [(b, c) for c in cs for b in bs if np.isfinite(b)] + [(np.inf, None)]
    bar = progress(total=len(configs) * seeds, desc="streams", unit="stream")
    errors = {}
    for b, c in configs:
        errors[b, c] = np.empty((seeds, len(Ts)))
        for seed in range(seeds):
            est = OnlineKernelRegressor(loss="pinball", quantile=tau, gamma=kernel_gamma,
                                        lam=lam, lam_decay=lam_decay, eta_decay=eta_decay)
            X, y = next(nonidentical(Ts[-1], b, c=1.0 if c is None else c,
                                     chunk_size=Ts[-1], random_state=seed))
            done = 0
            for k, T in enumerate(Ts):
                est.partial_fit(X[done:T], y[done:T])
                done = T
                errors[b, c][seed, k] = np.sqrt(np.mean((est.predict(grid) - target) ** 2))
            bar.update()
    bar.close()
    return errors


def slopes(Ts, err, fit_from):
    """Per-seed least-squares slopes of log err against log T over T >= fit_from."""
    keep = Ts >= fit_from
    return np.polyfit(np.log(Ts[keep]), np.log(err[:, keep]).T, 1)[0]


def mean_se(values):
    return values.mean(), values.std(ddof=1) / np.sqrt(len(values))


def table(bs, c, Ts, errors, fit_from):
    """The printed table for one c: slopes and final errors per b."""
    iid = errors[np.inf, None]
    lines = [f"c = {c:g}",
             f"{'b':>5} {'bound slope':>11} {'w_T':>6} {'measured slope':>16} "
             f"{'final error':>17} {'minus i.i.d.':>18}"]
    for b in bs:
        err = iid if np.isinf(b) else errors[b, c]
        s, s_se = mean_se(slopes(Ts, err, fit_from))
        f, f_se = mean_se(err[:, -1])
        g, g_se = mean_se(err[:, -1] - iid[:, -1])
        lines.append(f"{b:>5g} {-theorem_exponent(b):>+11.3f} {mixture_weight(Ts[-1], b, c):>6.3f} "
                     f"{s:>+7.3f} +- {s_se:.3f} {f:>8.4f} +- {f_se:.4f} {g:>+8.4f} +- {g_se:.4f}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="T up to 2^11, 4 seeds")
    parser.add_argument("--out", default="yang_nonidentical.png", help="PNG path")
    parser.add_argument("--seeds", type=int, default=None, help="default 20 (4 with --quick)")
    parser.add_argument("--max-log2-T", type=int, default=None,
                        help="the longest stream is 2^this (default 13, 11 with --quick)")
    parser.add_argument("--quantile", type=float, default=0.5, help="tau (Theorem 2.1: 1/2)")
    args = parser.parse_args(argv)
    max_log2 = args.max_log2_T or (11 if args.quick else 13)
    seeds = args.seeds or (4 if args.quick else 20)
    Ts = 2 ** np.arange(6, max_log2 + 1)
    fit_from = Ts[-1] / 10 ** min(1.0, 0.3 * (max_log2 - 8))      # the last decade
    bs, cs = (0.25, 0.5, 1.0, 2.0, np.inf), (1.0, 4.0)
    lam_decay, eta_decay = yang_exponents(1.0)
    start = time.perf_counter()
    errors = run(bs, cs, Ts, seeds, tau=args.quantile)
    print(f"Yang, fully online quantile regression (tau = {args.quantile:g}), Gaussian kernel "
          f"gamma = 20, lam_t = 0.1 t^-{lam_decay:g}, eta_t = t^-{eta_decay:g} / (1 + lam_t)")
    print("stream: x_t ~ (1 - w_t) U[0, 1] + w_t U[0, 0.2], w_t = min(1, c t^-b); "
          "y | x ~ U[f(x) - 1, f(x) + 1], f(x) = sin(2 pi x)")
    print(f"L2(rho_X) distance to the {args.quantile:g}-quantile after T = {Ts[-1]} steps, "
          f"{seeds} seeds (mean +- s.e.); slope of log error against log T for "
          f"T in [{fit_from:.0f}, {Ts[-1]}], per seed; bound slope: "
          f"-min(1/5, b/2 - 1/5), eq. (2.2) with r = 1 (positive: no convergence guaranteed); "
          f"minus i.i.d.: paired by seed")
    for c in cs:
        print(table(bs, c, Ts, errors, fit_from))
    print(f"({time.perf_counter() - start:.0f} s)")
    plot(bs, cs, Ts, errors, args.out)


def plot(bs, cs, Ts, errors, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib).")
        return

    fig, axes = plt.subplots(1, len(cs), figsize=(11, 4.4), sharey=True)
    colors = plt.get_cmap("viridis")(np.linspace(0.0, 0.85, len(bs)))
    for ax, c in zip(axes, cs):
        for b, color in zip(bs, colors):
            err = errors[np.inf, None] if np.isinf(b) else errors[b, c]
            mean, se = err.mean(axis=0), err.std(axis=0, ddof=1) / np.sqrt(len(err))
            label = "i.i.d. (b = inf)" if np.isinf(b) else (
                rf"b = {b:g} (bound $T^{{{-theorem_exponent(b):+.3f}}}$)")
            ax.plot(Ts, mean, marker="o", markersize=3, color=color, label=label)
            ax.fill_between(Ts, mean - se, mean + se, color=color, alpha=0.25)
        ref = errors[np.inf, None].mean(axis=0)[-1] * (Ts / Ts[-1]) ** -0.2
        ax.plot(Ts, ref, ":", color="black", label=r"$T^{-1/5}$ (Theorem 2.1, b $\geq$ 4/5)")
        ax.set(xscale="log", yscale="log", xlabel="steps T",
               title=rf"$w_t = \min(1, {c:g}\,t^{{-b}})$")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(r"$\|f_{T+1} - f_{\rho,\tau}\|_{L^2(\rho_X)}$ (mean $\pm$ s.e.)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Yang: fully online quantile regression on non-identical streams")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"plot written to {out}")


if __name__ == "__main__":
    main()
