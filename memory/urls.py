from django.urls import path

from memory import views
from memory.subjects import views as subject_views

app_name = "memory"

urlpatterns = [
    path("", views.memory_overview, name="memory-overview"),
    path("learnings/", views.learning_list, name="learning-list"),
    path("learnings/<int:learning_id>/", views.learning_detail, name="learning-detail"),
    path("subjects/", subject_views.subject_list, name="subject-list"),
    path("subjects/<str:key>/", subject_views.subject_detail, name="subject-detail"),
    path("subjects/<str:key>/facts/<slug:kind>/<slug:fact_id>/", subject_views.fact_row, name="subject-fact"),
    path(
        "subjects/<str:key>/facts/<slug:kind>/<slug:fact_id>/edit/", subject_views.fact_edit, name="subject-fact-edit"
    ),
    path(
        "subjects/<str:key>/facts/<slug:kind>/<slug:fact_id>/delete/",
        subject_views.fact_delete,
        name="subject-fact-delete",
    ),
]
