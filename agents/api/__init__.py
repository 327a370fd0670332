"""The agents app's REST API, one router per resource: ``agents`` (/agents: the fleet, manifests,
KPIs, tool calls), ``jobs``, ``triggers`` (signed inbound webhooks), ``approvals`` and
``registries``. The root API (controlplane/api.py) mounts each module's ``router``."""
