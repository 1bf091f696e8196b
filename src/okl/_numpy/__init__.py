"""The pure-NumPy engine: readable twins of the Cython loops, same iterates.

Every module here restates one Cython module in plain NumPy, one sample at a
time.  Tests compare the two; `bench/` measures the Cython engine against it.
"""
