"""Operator pages of the agents app. `jobs/` comes before `<agent_id>/`, which would match it."""

from django.urls import path

from agents import views

app_name = "agents"

urlpatterns = [
    path("", views.agent_list, name="agent-list"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<uuid:job_id>/", views.job_detail, name="job-detail"),
    path("jobs/<uuid:job_id>/artifacts/<str:kind>/", views.job_artifact, name="job-artifact"),
    path("<str:agent_id>/", views.agent_detail, name="agent-detail"),
    path("<str:agent_id>/manifests/<str:version>/", views.manifest_detail, name="agent-manifest"),
]
