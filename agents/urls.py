"""Operator pages of the agents app. `jobs/` and the example manifest come before `<agent_id>/`,
which would match them."""

from django.urls import path

from agents import views

app_name = "agents"

urlpatterns = [
    path("", views.agent_list, name="agent-list"),
    path("example-manifest.yaml", views.example_manifest, name="example-manifest"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<uuid:job_id>/", views.job_detail, name="job-detail"),
    path("jobs/<uuid:job_id>/artifacts/<str:kind>/", views.job_artifact, name="job-artifact"),
    path("<str:agent_id>/", views.agent_detail, name="agent-detail"),
    path("<str:agent_id>/manifests/<str:version>/", views.manifest_detail, name="agent-manifest"),
]
