"""The reviewer inbox and the decision log (mounted at /inbox/)."""

from django.urls import path

from governance.reviews import views

app_name = "reviews"

urlpatterns = [
    path("", views.inbox, name="inbox"),
    path("pending/", views.inbox_pending, name="inbox-pending"),
    path("decisions.csv", views.decisions_csv, name="inbox-decisions-csv"),
    path("items/<int:item_id>/", views.item_page, name="item"),
    path("<int:item_id>/decide/", views.decide, name="inbox-decide"),
    path("bulk/selected/", views.bulk_selected, name="inbox-bulk-selected"),
    path("bulk/matching/", views.bulk_matching, name="inbox-bulk-matching"),
]
