"""Viewer, Reviewer and Admin exist after migrate with the permissions their names promise."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group


def perms(user) -> set[str]:
    return user.get_all_permissions()


@pytest.mark.django_db
def test_the_three_groups_exist():
    assert set(Group.objects.values_list("name", flat=True)) >= {"Viewer", "Reviewer", "Admin"}


@pytest.mark.django_db
def test_a_viewer_reads_but_neither_decides_nor_changes(viewer):
    assert viewer.has_perm("agents.view_agent")
    assert viewer.has_perm("governance.view_taskrun")
    assert not viewer.has_perm("governance.decide_reviewitem")
    assert not viewer.has_perm("agents.change_agent")


@pytest.mark.django_db
def test_a_reviewer_decides_review_items_but_changes_nothing_else(reviewer):
    assert reviewer.has_perm("governance.decide_reviewitem")
    assert reviewer.has_perm("agents.view_agent")
    assert not reviewer.has_perm("agents.add_agent")
    assert not reviewer.has_perm("governance.add_apikey")


@pytest.mark.django_db
def test_an_admin_changes_the_product_and_the_schedules(admin_operator):
    assert admin_operator.has_perm("agents.add_agent")
    assert admin_operator.has_perm("governance.add_apikey")
    assert admin_operator.has_perm("governance.decide_reviewitem")
    assert admin_operator.has_perm("django_celery_beat.change_periodictask")
    assert not admin_operator.has_perm("auth.change_user")


def test_an_admin_unlocks_a_locked_out_login(admin_operator, viewer):
    assert admin_operator.has_perm("axes.delete_accessattempt")
    assert admin_operator.has_perm("axes.view_accessattempt")
    assert not viewer.has_perm("axes.delete_accessattempt")
