from django.urls import path

from sessions import views

urlpatterns = [
    path("", views.session_list, name="session-list"),
]
