from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from governance.reviews import kinds
        from memory import checks, holds, lifecycle  # noqa: F401  (checks: registers them)

        kinds.register(lifecycle.REVIEW)
        kinds.register(holds.REVIEW)
