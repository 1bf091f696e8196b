"""Sparse input: a malformed matrix is refused before any loop reads it."""
import numpy as np


def check_csr(X, n_features=None):
    """Refuse a sparse matrix whose structure would make a loop read or write out of bounds.

    scipy builds such matrices without complaint (their arrays can be edited
    after construction): an `indptr` of the wrong length, not starting at 0,
    decreasing or pointing past the data, or an index outside the shape (a
    CSR column index >= n_features).  CSR, CSC and COO matrices are checked;
    other formats are converted by scipy in Python.
    """
    n_rows, n_cols = X.shape
    n_features = n_cols if n_features is None else n_features
    fmt = getattr(X, "format", None)
    if fmt == "coo":
        row, col = np.asarray(X.row), np.asarray(X.col)
        problem = None
        if row.shape != col.shape or row.shape != np.shape(X.data):
            problem = "row, col and data differ in length"
        elif row.size and (row.min() < 0 or row.max() >= n_rows):
            problem = f"a row index is outside [0, {n_rows})"
        elif col.size and (col.min() < 0 or col.max() >= min(n_cols, n_features)):
            problem = f"a column index is outside [0, {min(n_cols, n_features)})"
        _refuse(problem)
        return
    if fmt not in ("csr", "csc"):
        return
    n_major, n_minor = (n_rows, min(n_cols, n_features)) if fmt == "csr" else (n_cols, n_rows)
    what = "column" if fmt == "csr" else "row"
    indptr, indices, data = np.asarray(X.indptr), np.asarray(X.indices), np.asarray(X.data)
    problem = None
    if indptr.ndim != 1 or indptr.shape[0] != n_major + 1:
        problem = f"indptr has shape {indptr.shape}, expected ({n_major + 1},)"
    elif indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu":
        problem = f"indptr and indices must be integers, got {indptr.dtype} and {indices.dtype}"
    elif indptr[0] != 0:
        problem = f"indptr starts at {indptr[0]}, not 0"
    elif np.any(indptr[1:] < indptr[:-1]):
        problem = "indptr decreases (a row would have a negative number of entries)"
    elif indices.ndim != 1 or data.ndim != 1 or indptr[-1] > min(len(indices), len(data)):
        problem = (f"indptr ends at {indptr[-1]}, past the {min(len(indices), len(data))} "
                   "stored entries (indices, data)")
    else:
        used = indices[:indptr[-1]]
        if used.size and (used.min() < 0 or used.max() >= n_minor):
            bad = used.min() if used.min() < 0 else used.max()
            problem = f"indices hold {what} {bad}, outside [0, {n_minor})"
    _refuse(problem)


def _refuse(problem):
    if problem:
        raise ValueError(f"The sparse matrix X is malformed: {problem}. Rebuild it, e.g. with "
                         "scipy.sparse.csr_matrix(X.toarray()), or call X.check_format() to see "
                         "what is wrong.")
