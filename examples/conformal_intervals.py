"""Calibrated intervals: okl.ConformalRegressor on a heteroscedastic and a drifting stream.
=========================================================================================

Two generated streams of 2 features uniform on [-3, 3]^2 (``y = sin(x0) + cos(x1) / 2`` plus noise):
a heteroscedastic one, whose noise sd grows from 0.05 to 0.95 with ``|x0|``, and a drifting one of
four phases whose amplitude, phase shift and noise change abruptly.  Each is learned one event at a
time by ``okl.ConformalRegressor(okl.OnlineKernelRegressor(), alpha=0.1)`` (aggregated adaptive
conformal inference, docs/conformal.md): the interval of every event is predicted before the
event is learned.  The figure shows the last events' intervals around the targets (top) and the
coverage over the last 500 events (bottom, target 0.9) for both streams; the printed table gives
the long-run coverage, the lowest 500-event coverage after the first 500 events and the mean width
beside the narrowest band that holds 90% of ``y | x`` (known here).

Run:  python examples/conformal_intervals.py [--out conformal_intervals.png] [--quick]
"""
import argparse

import numpy as np

from okl import ConformalRegressor, OnlineKernelRegressor

ALPHA = 0.1
Z = 1.6448536269514722      # the 0.95 quantile of the standard normal


def streams(n, rng):
    X = rng.uniform(-3, 3, (n, 2))
    mean = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1])
    sd = 0.05 + 0.3 * np.abs(X[:, 0])
    yield "heteroscedastic", X, mean + sd * rng.normal(size=n), sd
    phase = np.arange(n) * 4 // n
    amp, shift, sd = (np.array(v)[phase] for v in ([1.0, 2.0, 0.5, 1.5], [0.0, 1.5, -1.0, 3.0],
                                                   [0.3, 0.1, 1.0, 0.5]))
    y = amp * np.sin(X[:, 0] + shift) + 0.5 * np.cos(X[:, 1]) + sd * rng.normal(size=n)
    yield "drifting", X, y, sd


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--out", default="conformal_intervals.png")
    parser.add_argument("--quick", action="store_true", help="2,000 events per stream")
    args = parser.parse_args()
    n = 2000 if args.quick else 8000
    runs = []
    for name, X, y, sd in streams(n, np.random.default_rng(0)):
        model = ConformalRegressor(OnlineKernelRegressor(), alpha=ALPHA)
        bands = np.empty((n, 2))
        for i, (x, target) in enumerate(zip(X, y)):
            bands[i] = model.predict_interval_one(x)
            model.learn_one(x, float(target))
        covered = (y >= bands[:, 0]) & (y <= bands[:, 1])
        window = np.convolve(covered, np.ones(500) / 500, mode="valid")     # events 500..n
        width = np.diff(bands, axis=1)[:, 0]
        finite = np.isfinite(width)
        print(f"{name:>16}: coverage {covered.mean():.4f}, lowest 500-event coverage "
              f"{window[1:].min():.3f}, mean width {width[finite].mean():.3f} "
              f"(narrowest band {2 * Z * sd.mean():.3f})")
        runs.append((name, y, bands, window))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'okl[plot]').")
        return
    fig, axes = plt.subplots(2, 2, figsize=(10, 6))
    shown = slice(n - 300, n)
    for (name, y, bands, window), (top, bottom) in zip(runs, axes.T):
        t = np.arange(n)[shown]
        top.fill_between(t, bands[shown, 0], bands[shown, 1], alpha=0.35, step="mid",
                         label="90% interval")
        top.plot(t, y[shown], ".", ms=3, color="k", label="target")
        top.set(title=f"{name}: the last 300 events", xlabel="event")
        top.legend(fontsize=7, loc="upper left")
        bottom.plot(np.arange(500, n + 1), window)
        bottom.axhline(1 - ALPHA, color="k", lw=0.8, ls="--")
        bottom.axhline(1 - ALPHA - 0.05, color="r", lw=0.8, ls=":")
        bottom.set(xlabel="event", ylabel="coverage of the last 500", ylim=(0.7, 1.0))
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"figure written to {args.out}")


if __name__ == "__main__":
    main()
