"""The sessions app's REST API, one router per resource: ``sessions`` (/sessions: the state
machine's sessions, their events, messages and prompt) and ``automations`` (/automations, their
provider profiles included). The root API (controlplane/api.py) mounts each module's ``router``."""
