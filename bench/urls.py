"""The project's URLs plus ``/bench/bare``, so the baseline crosses the same middleware stack."""

from django.urls import path

from bench import views
from governance import urls as project_urls

urlpatterns = [*project_urls.urlpatterns, path("bench/bare", views.bare)]

handler404 = project_urls.handler404
