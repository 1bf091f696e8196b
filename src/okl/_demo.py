"""`okl demo`: learn a heteroscedastic stream, print progressive validation, plot it.

Four learners share one stream: Smale-Yao least squares (the conditional
mean) and Yang's epsilon-pinball regression for the 0.1, 0.5 and 0.9
quantiles.  Every sample is first predicted, then learned, so the figures
printed are honest out-of-sample estimates on the stream.
"""
import time

import numpy as np

from okl._progress import progress, write
from okl.evaluation import progressive_validation
from okl.regression import OnlineKernelRegressor
from okl.schedules import yang_exponents

QUANTILES = (0.1, 0.5, 0.9)


def make_stream(n, seed=0):
    """x uniform on [-3, 3]; y = sin(2x) + x/3 + noise whose scale grows with |x|."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3.0, 3.0, n)
    y = np.sin(2 * x) + x / 3 + (0.1 + 0.25 * np.abs(x)) * rng.standard_normal(n)
    return x[:, None], y


def run(n=8000, seed=0, chunk=1000, out="okl-demo.png"):
    """Learn the stream with all four learners; return them and their progressive predictions."""
    X, y = make_stream(n, seed)
    learners = {"mean": OnlineKernelRegressor(gamma=2.0, lam=1e-3)}
    lam_decay, eta_decay = yang_exponents(1.0)      # Yang's fully online preset
    for tau in QUANTILES:
        learners[f"q{tau}"] = OnlineKernelRegressor(
            gamma=2.0, loss="pinball", quantile=tau, epsilon=0.05, lam=1e-3,
            lam_decay=lam_decay, eta_decay=eta_decay)
    preds = {name: np.empty(n) for name in learners}
    write(f"okl demo: {n} samples of y = sin(2x) + x/3 + heteroscedastic noise, "
          "each predicted before it is learned")
    write(f"{'t':>6} {'mse(mean)':>10} " + " ".join(f"{'cover(' + str(q) + ')':>11}"
                                                   for q in QUANTILES)
          + f" {'centres':>18} {'seconds':>8}")
    start = time.perf_counter()
    bar = progress(total=n, desc="okl demo", unit="samples")
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        for name, est in learners.items():
            preds[name][lo:hi] = progressive_validation(est, X[lo:hi], y[lo:hi]).predictions
        mse = np.mean((preds["mean"][:hi] - y[:hi]) ** 2)
        cover = [np.mean(y[lo:hi] <= preds[f"q{q}"][lo:hi]) for q in QUANTILES]
        centres = "/".join(str(est.n_support_) for est in learners.values())
        write(f"{hi:>6} {mse:>10.4f} " + " ".join(f"{c:>11.3f}" for c in cover)
              + f" {centres:>18} {time.perf_counter() - start:>8.2f}")
        bar.update(hi - lo)
    bar.close()
    print("coverage is per chunk (target: the quantile); mse is cumulative.")
    _plot(X, y, learners, preds, out)
    return learners, preds


def _plot(X, y, learners, preds, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'okl[plot]').")
        return
    n = len(y)
    t = np.arange(1, n + 1)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.plot(t, np.cumsum((preds["mean"] - y) ** 2) / t, label="least squares: MSE")
    for q in QUANTILES:
        u = preds[f"q{q}"] - y
        pinball = np.where(u > 0, (1 - q) * u, -q * u)
        ax1.plot(t, np.cumsum(pinball) / t, label=f"quantile {q}: pinball loss")
    ax1.set(xscale="log", yscale="log", xlabel="samples seen t",
            ylabel="progressive (predict-then-learn) loss", title="Learning curves")
    ax1.legend(fontsize=8)
    grid = np.linspace(-3, 3, 300)[:, None]
    ax2.scatter(X[:, 0], y, s=2, alpha=0.25, color="gray", label="stream")
    ax2.plot(grid, learners["mean"].predict(grid), label="mean (Smale-Yao)")
    for q in QUANTILES:
        ax2.plot(grid, learners[f"q{q}"].predict(grid), "--", label=f"quantile {q} (Yang)")
    ax2.set(xlabel="x", ylabel="y", title=f"Models after {n} samples")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"learning curves written to {out}")
