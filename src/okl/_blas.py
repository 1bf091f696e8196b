"""BLAS on one thread for okl's small products (the library scan is done once per process)."""
from threadpoolctl import ThreadpoolController

_CONTROLLER = []


def one_thread():
    """A context with BLAS/LAPACK on one thread.

    okl's products are small and memory-bound (the Nystroem map and its
    eigendecomposition, the metric pair kernel's dgemm, the NumPy twins'
    matrix-vector products): one thread loses little, and on a shared 2-core
    machine their threads, waiting for a busy core, stalled them tenfold (symv
    at m = 400: 7 ms on two threads, 17 us on one).  scikit-learn's KMeans does
    the same.
    """
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
