from django.apps import AppConfig


class GatewayConfig(AppConfig):
    """The MCP endpoint: the platform's own capabilities as MCP tools (and, later, the governed
    gateway to upstream MCP servers)."""

    name = "gateway"
    default_auto_field = "django.db.models.BigAutoField"
