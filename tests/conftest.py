"""Test session setup.

scikit-learn's array-API estimator check runs only when SciPy was imported
with SCIPY_ARRAY_API=1; set it before anything imports SciPy so that
parametrize_with_checks runs that check instead of skipping it.
"""
import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")
