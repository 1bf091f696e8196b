"""The regression defaults on a wider set of chaotic and quasi-periodic series, learned raw.

KAFBOX's protocol as in bench/krls_defaults.py: one-step prediction from embedded past values
(the series on its own scale, not standardised), every learner untuned unless its parameters say
otherwise, 10 log10 of the MSE after the first 1000 of 10000 events.  The series are made here
(no download): Lorenz's x, y and z from three starts (okl.synth.lorenz, embedding 6),
Mackey-Glass at tau 17 and 30 (okl.synth.mackey_glass, embedding 7), Rossler's x (embedding 6),
the Henon map's x (embedding 2: the map is a function of the last two values) and a sum of three
sines of incommensurate periods with Gaussian noise of standard deviation 0.01 (embedding 6; its
floor is -40 dB).  The last column is scikit-learn's batch KernelRidge fitted on the first 1000
events with alpha and gamma chosen on the rest (hindsight; bench/krls_defaults.py).

    python bench/krls_series.py                      # every series, the default learners
    python bench/krls_series.py --series lorenz_z0 mackey_glass30 \\
        --learners "KernelRLSRegressor(nu=1e-5)" "MultiKernelRegressor()"

--learners takes Python expressions of okl's learners (evaluated with KernelRLSRegressor and
MultiKernelRegressor in scope).  The header names the SIMD level and OpenBLAS's kernels in use:
run it with OKL_SIMD=baseline or OPENBLAS_CORETYPE=Prescott to compare them (docs/krls.md,
section 8).
"""
import argparse
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_info

from okl import KernelRLSRegressor, MultiKernelRegressor
from okl._gamma import scale_gamma
from okl._core._kernels import simd_level
from okl.synth import lorenz, mackey_glass

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from krls_defaults import figure, hindsight_ridge  # noqa: E402

N = 10000
LEARNERS = [
    "KernelRLSRegressor()",
    "KernelRLSRegressor(drift_detector=None)",
    # KAFBOX's KRLS-T settings for Lorenz (its published -56.8 dB)
    "KernelRLSRegressor(noise=1e-6, nu=1e-6, gamma=1 / (2 * 32 ** 2), budget=200)",
    "MultiKernelRegressor()",
]


def rk4(velocity, p, dt, steps, burn_in):
    """The states of p' = velocity(p) by the classical Runge-Kutta method, after burn_in steps."""
    out = np.empty((steps, len(p)))
    for step in range(burn_in + steps):
        k1 = velocity(p)
        k2 = velocity(p + 0.5 * dt * k1)
        k3 = velocity(p + 0.5 * dt * k2)
        p = p + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + velocity(p + dt * k3))
        if step >= burn_in:
            out[step - burn_in] = p
    return out


def embed(series, embedding):
    """X: rows of `embedding` consecutive values, y: the value after each row."""
    X = np.lib.stride_tricks.sliding_window_view(series[:-1], embedding)
    return np.ascontiguousarray(X), series[embedding:]


def rossler(a=0.2, b=0.2, c=5.7, dt=0.05, embedding=6):
    def velocity(p):
        x, y, z = p
        return np.array([-y - z, x + a * y, b + z * (x - c)])

    states = rk4(velocity, np.array([1.0, 1.0, 1.0]), dt, N + embedding, 2000)
    return embed(states[:, 0], embedding)


def henon(a=1.4, b=0.3, embedding=2):
    x = np.empty(N + embedding + 1000)
    x[:2] = 0.1, 0.0
    for t in range(2, len(x)):
        x[t] = 1.0 - a * x[t - 1] ** 2 + b * x[t - 2]
    return embed(x[1000:], embedding)


def sines(noise=0.01, embedding=6):
    t = np.arange(N + embedding, dtype=float)
    s = np.sin(0.1 * t) + 0.5 * np.sin(0.1 * np.sqrt(2.0) * t + 1.0) + 0.3 * np.sin(0.037 * t)
    return embed(s + noise * np.random.default_rng(0).standard_normal(len(t)), embedding)


def series():
    """name -> a function making (X, y)."""
    out = {}
    for seed in range(3):
        for c in "xyz":
            out[f"lorenz_{c}{seed}"] = (lambda c=c, seed=seed:
                                        lorenz(N, embedding=6, component=c, random_state=seed))
    for tau in (17, 30):
        out[f"mackey_glass{tau}"] = (lambda tau=tau:
                                     mackey_glass(N, embedding=7, tau=float(tau), random_state=0))
    out["rossler_x"] = rossler
    out["henon_x"] = henon
    out["sines"] = sines
    return out


def state(est, X):
    """What a fitted learner ended with: its width as a factor of the scale rule's on the first
    100 rows, its noise, centres, drift changes and the largest entry of its factor R (the
    conditioning of its dictionary, docs/krls.md, section 8); a pool's learners and weights."""
    if isinstance(est, MultiKernelRegressor):
        return "; ".join(f"{name} w={w:.3g} ({state(m, X)})"
                         for (name, m), w in zip(est._members, est.weights_))
    gamma = est.__dict__.get("gamma_")
    width = "" if gamma is None else f"gamma_={gamma / scale_gamma(X[:100]):.3g} x scale, "
    R = est._krls.get_arrays()["R"]
    return (f"{est.kernel_} {width}noise_={est.__dict__.get('noise_', est.noise):.3g}, "
            f"n_support_={est.n_support_}, n_drifts_={est.n_drifts_}, "
            f"max |R|^2 {np.abs(R).max() ** 2:.1e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", nargs="*", default=None)
    parser.add_argument("--learners", nargs="*", default=LEARNERS,
                        help="Python expressions of the learners")
    parser.add_argument("--no-ridge", action="store_true", help="leave out the KernelRidge column")
    parser.add_argument("--state", action="store_true",
                        help="print what each learner ended with (width over the scale rule's, "
                             "noise, centres, changes seen, max |R|^2; a pool's weights)")
    args = parser.parse_args(argv)
    make = series()
    names = args.series or list(make)
    blas = sorted({i["architecture"] for i in threadpool_info() if i["internal_api"] == "openblas"})
    print(f"SIMD level {simd_level()}, OpenBLAS {', '.join(blas)}", flush=True)
    warnings.simplefilter("ignore")
    header = ["series"] + args.learners + ([] if args.no_ridge else ["KernelRidge (hindsight)"])
    rows = []
    for name in names:
        X, y = make[name]()
        row = [name]
        for expr in args.learners:
            est = eval(expr, {"KernelRLSRegressor": KernelRLSRegressor,
                              "MultiKernelRegressor": MultiKernelRegressor})
            start = time.process_time()
            pred = est._progressive_scores(X, y, reset=True)
            cost = (time.process_time() - start) / len(y) * 1e6
            row.append(f"{figure(pred, y, 'series'):.1f} ({cost:.0f} us)")
            print(name, expr, row[-1], flush=True)
            if args.state:
                print("   ", state(est, X), flush=True)
        if not args.no_ridge:
            row.append(f"{hindsight_ridge(X, y, 'series'):.1f}")
        rows.append(row)
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
