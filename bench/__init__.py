"""Runnable benchmarks (DESIGN section 7): each times our code and a baseline in one run.

A benchmark is a module here with ``main(argv) -> int`` (its own CLI flags) and a ``run(...)``
returning the results dict it also writes to ``bench/results/<name>.json``. ``python -m bench``
runs them all, or the ones named. Importing this package does not configure Django, so a
benchmark can choose its settings and database before ``django.setup()``.
"""
