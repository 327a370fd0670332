"""The contract catalog and its reports (mounted at /contracts/). ``fleet/`` and ``agents/`` come
before ``<name>/``, which would match them."""

from django.urls import path

from governance.contracts import views

app_name = "contracts"

urlpatterns = [
    path("", views.catalog, name="contracts"),
    path("fleet/", views.fleet, name="contract-fleet"),
    path("fleet/report.md", views.fleet_export, {"fmt": "md"}, name="contract-fleet-md"),
    path("fleet/report.csv", views.fleet_export, {"fmt": "csv"}, name="contract-fleet-csv"),
    path("agents/<str:agent_id>/", views.agent_report, name="contract-agent"),
    path("<str:name>/", views.detail, name="contract-detail"),
    path("<str:name>/spec-audit/", views.spec_audit, name="contract-spec-audit"),
    path("<str:name>/report.md", views.report_export, {"fmt": "md"}, name="contract-report-md"),
    path("<str:name>/report.csv", views.report_export, {"fmt": "csv"}, name="contract-report-csv"),
]
