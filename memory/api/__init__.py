"""The memory app's REST API under /api/v1/memory, one router per resource family: ``learnings``
(learnings, gate results, the injection block, search) and ``notes`` (watch notes and
clarifications). The root API (controlplane/api.py) mounts them, and the subjects sub-app's
router, under the learnings router."""
