from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from governance.reviews import services as reviews
        from memory import lifecycle

        reviews.register(lifecycle.REVIEW_KIND, lifecycle.on_review_decided)
