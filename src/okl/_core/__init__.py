"""Typed-Cython hot loops of okl (private)."""
