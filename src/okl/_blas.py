"""BLAS on one thread for okl's small products (the library scan is done once per process)."""
from contextlib import contextmanager
from contextvars import ContextVar

from threadpoolctl import ThreadpoolController

_CONTROLLER = []
#: True inside `one_thread`: a nested one leaves the limit to it
_LIMITED = ContextVar("okl_one_thread", default=False)


@contextmanager
def one_thread():
    """A context with BLAS/LAPACK on one thread.

    okl's products are small and memory-bound (the Nystroem map and its
    eigendecomposition, the metric pair kernel's dgemm, the NumPy twins'
    matrix-vector products): one thread loses little, and on a shared 2-core
    machine their threads, waiting for a busy core, stalled them tenfold (symv
    at m = 400: 7 ms on two threads, 17 us on one).  scikit-learn's KMeans does
    the same.
    """
    if _LIMITED.get():      # (setting the limits again costs tens of us)
        yield
        return
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    token = _LIMITED.set(True)
    try:
        with _CONTROLLER[0].limit(limits=1, user_api="blas"):
            yield
    finally:
        _LIMITED.reset(token)
