from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from governance import reviews
        from memory import lifecycle

        reviews.register(lifecycle.REVIEW_KIND, lifecycle.on_review_decided)
