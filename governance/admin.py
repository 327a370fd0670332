"""The governance app's admin lives next to the code it administers; Django's autodiscovery imports
this module, which registers them all."""

from governance.contracts import admin as contracts_admin
from governance.kernel import admin as kernel_admin
from governance.notifications import admin as notifications_admin
from governance.reviews import admin as reviews_admin

__all__ = ["contracts_admin", "kernel_admin", "notifications_admin", "reviews_admin"]
