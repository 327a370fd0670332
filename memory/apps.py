from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from governance.reviews import services as reviews
        from memory import checks, lifecycle  # noqa: F401  (checks: registers them)

        reviews.register(lifecycle.REVIEW_KIND, lifecycle.on_review_decided)
