from django.apps import AppConfig


class GatewayConfig(AppConfig):
    """The MCP endpoint: the platform's own capabilities as MCP tools, and the governed gateway to
    upstream MCP servers."""

    name = "gateway"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents import tools
        from gateway import checks, forwarding, pins  # noqa: F401  (checks: registers them)
        from governance.reviews import kinds

        kinds.register(pins.REVIEW)
        tools.INPUT_SCHEMAS.provide(forwarding.input_schema)
