"""Settings for benchmarks: the project's settings plus a bare view as the baseline.

A separate module (rather than a URL added to the project) keeps the unauthenticated
``/bench/bare`` endpoint out of every real deployment.
"""

from governance.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
