"""Which kernel the warm-up's evidence would choose: the Gaussian widths of noise="auto"
(scale x WIDTH_FACTORS, noise in NOISE_GRID) against a linear kernel and a Gaussian + linear sum,
on the first 100 events of each stream of bench/krls_defaults.py (tabular streams standardised
on those events, the series raw), by `okl._numpy.krls.log_evidence` (docs/krls.md, section 8).
The linear kernel is x^T u over its mean diagonal, so that the noise grid means the same; the
sum is a K_gauss + (1 - a) K_lin, a in {0.25, 0.5, 0.75}.  Printed: each candidate's largest log
evidence and where it is reached.

    python bench/krls_evidence.py
"""
import sys

import numpy as np

from okl._numpy.krls import NOISE_GRID, WIDTH_FACTORS, log_evidence
from okl.kernels import kernel_matrix

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from krls_defaults import streams  # noqa: E402


def main():
    for name, (X, y, kind) in streams().items():
        Xw, yw = X[:100], y[:100]
        if kind == "tabular":
            Xw = (Xw - Xw.mean(0)) / np.maximum(Xw.std(0), 1e-12)
        d = X.shape[1]
        w = np.ones(len(yw))
        scale = 1.0 / (d * Xw.var()) if kind == "series" else 1.0 / d
        best = {}
        for f in WIDTH_FACTORS:
            K = kernel_matrix(Xw, Xw, gamma=scale * f)
            for noise in NOISE_GRID:
                v = log_evidence(K, yw, w, noise, True)
                if v > best.get("gauss", (-np.inf,))[0]:
                    best["gauss"] = (v, float(f), float(noise))
        L = Xw @ Xw.T / np.mean(np.sum(Xw * Xw, 1))
        for noise in NOISE_GRID:
            v = log_evidence(L, yw, w, noise, True)
            if v > best.get("linear", (-np.inf,))[0]:
                best["linear"] = (v, None, float(noise))
        for f in WIDTH_FACTORS:
            K = kernel_matrix(Xw, Xw, gamma=scale * f)
            for mix in (0.25, 0.5, 0.75):
                for noise in NOISE_GRID:
                    v = log_evidence(mix * K + (1 - mix) * L, yw, w, noise, True)
                    if v > best.get("sum", (-np.inf,))[0]:
                        best["sum"] = (v, (float(f), mix), float(noise))
        print(name, "; ".join(f"{k}: log evidence {v[0]:.1f} at width factor / mix {v[1]}, "
                              f"noise {v[2]:g}" for k, v in best.items()), flush=True)


if __name__ == "__main__":
    main()
