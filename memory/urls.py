from django.urls import path

from memory import views

urlpatterns = [
    path("", views.memory_overview, name="memory-overview"),
]
