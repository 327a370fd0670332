from django.urls import path

from sessions import views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="session-list"),
    path("<uuid:session_id>/", views.session_detail, name="session-detail"),
    path("<uuid:session_id>/live/", views.session_live, name="session-live"),
    path("<uuid:session_id>/events/", views.session_events, name="session-events"),
    path("<uuid:session_id>/stop/", views.session_stop, name="session-stop"),
]
