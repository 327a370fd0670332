from django.urls import path

from bench import views
from controlplane import urls as project_urls

urlpatterns = [
    *project_urls.urlpatterns,
    path("bench/bare", views.bare),
    path("bench/raw/jobs", views.raw_create),
    path("bench/raw/jobs/replay", views.raw_replay),
]

handler404 = project_urls.handler404
