from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from governance.reviews import services as reviews
        from memory import checks, holds, lifecycle  # noqa: F401  (checks: registers them)

        reviews.register(lifecycle.REVIEW_KIND, lifecycle.on_review_decided)
        reviews.register(holds.REVIEW_KIND, holds.on_review_decided)
