"""Settings for benchmarks: the project's settings plus the baseline views.

A separate module (rather than URLs added to the project) keeps the unauthenticated
``/bench/bare`` and ``/bench/raw/jobs`` endpoints out of every real deployment.
"""

from controlplane.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
"""The project's URLs plus the baselines (``bench/urls.py``), so they cross the same middleware stack."""
