from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from agents import hooks as agent_hooks
        from governance.reviews import kinds
        from memory import checks, holds, lifecycle, rag  # noqa: F401  (checks: registers them)

        kinds.register(lifecycle.REVIEW)
        kinds.register(holds.REVIEW)
        agent_hooks.JOB_MEMORY.provide(rag)
