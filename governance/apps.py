from django.apps import AppConfig
from django.db.models.signals import post_migrate


class GovernanceConfig(AppConfig):
    name = "governance"
    verbose_name = "Governance"

    def ready(self) -> None:
        from governance.kernel import checks, metrics, roles, taskruns  # noqa: F401  (checks: registers them)
        from governance.kernel.admin import TARGET_PAGES
        from governance.notifications import checks as notification_checks  # noqa: F401  (registers them)

        taskruns.connect()
        TARGET_PAGES.register("governance.reviewitem", "reviews:item")
        metrics.connect()
        # Permissions of models added by later migrations join the roles they belong to.
        post_migrate.connect(roles.sync_after_migrate, dispatch_uid="governance.kernel.roles.sync")
