from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from governance import views
from governance.api import api

admin.site.site_header = "Agent governance control plane"
admin.site.site_title = "Agent governance"
admin.site.index_title = "Administration"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="inbox", permanent=False), name="home"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("inbox/", views.inbox, name="inbox"),
    path("inbox/pending/", views.inbox_pending, name="inbox-pending"),
    path("inbox/decisions.csv", views.decisions_csv, name="inbox-decisions-csv"),
    path("inbox/<int:item_id>/decide/", views.decide, name="inbox-decide"),
    path("inbox/promotions/approve/", views.bulk_approve, name="inbox-bulk-approve"),
    path("contracts/", views.contracts, name="contracts"),
    path("agents/", include("agents.urls")),
    path("sessions/", include("sessions.urls")),
    path("memory/", include("memory.urls")),
]

handler404 = "governance.views.not_found"
