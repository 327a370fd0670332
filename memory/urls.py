from django.urls import path

from memory import views

urlpatterns = [
    path("", views.memory_overview, name="memory-overview"),
    path("learnings/<int:learning_id>/", views.learning_detail, name="learning-detail"),
]
