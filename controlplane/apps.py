from django.apps import AppConfig
from ninja import NinjaAPI


class ControlPlaneConfig(AppConfig):
    """Installed so the project's commands (serve, load_demo...) are found, and so it can wire
    what only the top knows into the registry's stores (governance/kernel/registry.py).

    It has no models, so no migrations and no permissions: app labels stay those of the apps.
    """

    name = "controlplane"
    verbose_name = "Control plane"

    def ready(self) -> None:
        from controlplane import gauges
        from governance.kernel import metrics, validation
        from memory import injection
        from sessions import hooks as session_hooks

        metrics.register(gauges.collect)
        # Sessions and memory never import each other: the project hands memory's step-0 block
        # to the sessions' prompt, and the root API to the input guard below every app.
        session_hooks.SESSION_MEMORY.provide(injection)
        validation.GUARDED_API.provide(_root_api)


def _root_api() -> NinjaAPI:
    """The root API, imported when the input guard first needs it: workers, beat and commands
    never load the routers for it (about 0.15 s at every start)."""
    from controlplane.api import api

    return api
