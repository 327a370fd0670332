"""The governance app's models, defined next to the code that owns them: the kernel's (API keys,
audit trail, task runs), notifications', the reviewer inbox's and the contract catalog's. Django
discovers an app's models through this module."""

from governance.contracts.models import Contract, ContractCheck, ContractDailyStat, ContractField, ContractViolationStat
from governance.kernel.models import ApiKey, AuditEvent, RetentionRun, TaskRun
from governance.notifications.models import ComplianceWatch, Delivery, NotificationRule
from governance.reviews.models import ReviewDecision, ReviewItem

__all__ = [
    "ApiKey",
    "AuditEvent",
    "ComplianceWatch",
    "Contract",
    "ContractCheck",
    "ContractDailyStat",
    "ContractField",
    "ContractViolationStat",
    "Delivery",
    "NotificationRule",
    "RetentionRun",
    "ReviewDecision",
    "ReviewItem",
    "TaskRun",
]
