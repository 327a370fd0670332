from django.urls import path

from agents import views

urlpatterns = [
    path("", views.agent_list, name="agent-list"),
]
