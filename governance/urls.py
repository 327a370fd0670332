from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from governance.api import api
from governance.contracts import views as contract_views
from governance.reviews import views

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
    # fleet/ and agents/ come before <name>/, which would match them.
    path("contracts/", contract_views.catalog, name="contracts"),
    path("contracts/fleet/", contract_views.fleet, name="contract-fleet"),
    path("contracts/fleet/report.md", contract_views.fleet_export, {"fmt": "md"}, name="contract-fleet-md"),
    path("contracts/fleet/report.csv", contract_views.fleet_export, {"fmt": "csv"}, name="contract-fleet-csv"),
    path("contracts/agents/<str:agent_id>/", contract_views.agent_report, name="contract-agent"),
    path("contracts/<str:name>/", contract_views.detail, name="contract-detail"),
    path("contracts/<str:name>/spec-audit/", contract_views.spec_audit, name="contract-spec-audit"),
    path("contracts/<str:name>/report.md", contract_views.report_export, {"fmt": "md"}, name="contract-report-md"),
    path("contracts/<str:name>/report.csv", contract_views.report_export, {"fmt": "csv"}, name="contract-report-csv"),
    path("agents/", include("agents.urls")),
    path("sessions/", include("sessions.urls")),
    path("memory/", include("memory.urls")),
]

handler404 = "governance.kernel.views.not_found"
