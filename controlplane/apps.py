from django.apps import AppConfig


class ControlPlaneConfig(AppConfig):
    """Installed so the project's commands (serve, load_demo...) and fleet-wide gauges are found.

    It has no models, so no migrations and no permissions: app labels stay those of the apps.
    """

    name = "controlplane"
    verbose_name = "Control plane"

    def ready(self) -> None:
        from controlplane import gauges
        from governance.kernel import metrics

        metrics.register(gauges.collect)
