"""Self-calibrating search (memory/calibration.py): `tune_search` measures recall against an exact scan,
records the lowest ef_search that reaches the target per (kind, model), and searches use it at once."""

from __future__ import annotations

import random

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.db import connection
from django.template.defaultfilters import floatformat
from django.test.utils import CaptureQueriesContext

from governance.kernel.exceptions import Forbidden
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM, Principal
from memory import calibration, search
from memory.models import Embedding, Learning, SearchCalibration
from memory.vector_index import DEFAULT_DIMENSION, create_index_sql
from tests.factories.memory import EmbeddingFactory
from tests.memory.test_vector_index import unit

# A model of its own, with its own HNSW index made (and rolled back) in each test: rows of the shipped
# model's index would stay in it as dead entries after the rollback and crowd other tests' searches.
MODEL = "calibration-test"


@pytest.fixture
def vectors(db) -> int:
    search.forget_calibrations()  # another test's calibration, rolled back, may still be read
    with connection.cursor() as cursor:
        cursor.execute(create_index_sql("learning", MODEL, DEFAULT_DIMENSION))
    rng = random.Random(7)
    Embedding.objects.bulk_create(  # archived rows are outside the index and the measure
        EmbeddingFactory.build(object_id=n, model=MODEL, embedding=unit(rng), active=n % 10 != 0) for n in range(600)
    )
    return 540


def test_recall_counts_the_exact_top_k_the_index_found_with_its_lower_bound():
    mean, low = calibration.recall_at_k([[1, 2, 3], [4, 5, 9]], [[1, 2, 3], [4, 5, 6]], 3)
    assert mean == pytest.approx(5 / 6)
    # shares 1 and 2/3: standard deviation 0.2357, standard error 0.1667
    assert low == pytest.approx(5 / 6 - 1.645 * (1 / 6), abs=1e-4)
    assert calibration.recall_at_k([[1], [2], [3]], [[1], [2], [3]], 1) == (1.0, 1.0)  # no spread, no margin
    assert calibration.recall_at_k([], [], 5) == (1.0, 1.0)


def test_a_sample_with_more_spread_needs_a_higher_mean_to_reach_the_target():
    exact = [[1, 2, 3, 4, 5]] * 200
    steady = [[1, 2, 3, 4, 5]] * 191 + [[1, 2, 3, 4, 9]] * 9  # 0.991 mean, every query close to it
    spread = [[1, 2, 3, 4, 5]] * 188 + [[1, 2, 9, 9, 9]] * 12  # 0.964 mean, a few queries at 2 in 5
    assert calibration.recall_at_k(steady, exact, 5)[1] >= 0.95
    mean, low = calibration.recall_at_k(spread, exact, 5)
    assert mean >= 0.95 > low


def test_the_lowest_ef_search_whose_bound_reaches_the_target_wins_else_the_best_tried():
    Point = calibration.Point
    curve = [Point(40, 0.81, 0.78), Point(80, 0.96, 0.94), Point(120, 0.97, 0.955), Point(160, 0.99, 0.98)]
    assert calibration.lowest_reaching(curve, 0.95) == (curve[2], True)  # 80's mean reached it, its bound did not
    assert calibration.lowest_reaching(curve[:2], 0.95) == (curve[1], False)


def test_tuning_records_what_it_measured_and_who_ran_it(vectors):
    [row] = calibration.tune(actor=SYSTEM, sample=50, target=0.95)

    assert (row.kind, row.model, row.k) == ("learning", MODEL, 5)
    assert (row.vectors, row.sample_size) == (vectors, 50)
    assert row.ef_search in calibration.EF_STEPS
    chosen = next(point for point in row.curve if point["ef_search"] == row.ef_search)
    assert chosen["recall"] == pytest.approx(row.recall, abs=1e-4)
    assert chosen["low"] <= chosen["recall"]
    assert row.reached == (chosen["low"] >= 0.95)
    assert row.curve[-1]["ef_search"] == row.ef_search or not row.reached
    assert all(point["low"] < 0.95 for point in row.curve[:-1])  # it stopped at the first bound that reached it
    event = AuditEvent.objects.get(action="search.calibrated")
    assert (event.actor, event.target_id, event.data["ef_search"]) == ("system", str(row.pk), row.ef_search)


def test_a_search_asks_the_index_for_the_calibrated_ef_search(vectors):
    assert search.candidate_count("learning", MODEL) == 80  # MEMORY_SEARCH_CANDIDATES until measured
    calibration.tune(actor=SYSTEM, sample=20, target=0.5)
    SearchCalibration.objects.filter(kind="learning").update(ef_search=320)  # as a larger memory would need
    search.forget_calibrations()  # what a minute does for every other process

    assert search.candidate_count("learning", MODEL) == 320
    assert search.candidate_count("veille", MODEL) == 80  # each (kind, model) its own
    assert search.candidate_count("learning", MODEL, k=100) == 800  # never under the over-fetch
    captured = CaptureQueriesContext(connection)
    with captured:
        Learning.objects.nearest([0.1] * DEFAULT_DIMENSION, model=MODEL, dimension=DEFAULT_DIMENSION)
    statements = [query["sql"] for query in captured.captured_queries]
    assert "SET LOCAL hnsw.ef_search = 320" in statements
    # The filtered walk goes on past ef_search until it holds its rows (pgvector 0.8+, as shipped).
    assert "SET LOCAL hnsw.iterative_scan = relaxed_order" in statements


def test_a_new_measure_applies_to_the_next_search_of_the_process_that_made_it(
    vectors, django_capture_on_commit_callbacks
):
    assert search.candidate_count("learning", MODEL) == 80
    with django_capture_on_commit_callbacks(execute=True):
        [row] = calibration.tune(actor=SYSTEM, sample=20, target=0.5)
    assert search.candidate_count("learning", MODEL) == max(40, row.ef_search)


def test_an_agent_or_an_operator_without_the_permission_cannot_tune(vectors, vlevel, viewer):
    with pytest.raises(Forbidden):
        calibration.tune(actor=Principal(agent=vlevel))
    with pytest.raises(Forbidden):
        calibration.tune(actor=Principal(user=viewer))
    assert not SearchCalibration.objects.exists()

    viewer.user_permissions.add(Permission.objects.get(codename="change_searchcalibration"))
    operator = type(viewer).objects.get(pk=viewer.pk)  # permissions are cached on the instance
    [row] = calibration.tune(actor=Principal(user=operator), sample=10, target=0.5)
    assert row.measured_by == f"user:{operator.get_username()}"


def test_the_command_prints_each_measure_and_refuses_a_bad_target(vectors, capsys):
    call_command("tune_search", "--sample", "20", "--target", "0.5")
    out = capsys.readouterr().out
    assert f"[tune_search] learning/{MODEL}: ef_search " in out
    assert f"over 20 of {vectors} vectors (target 0.5 reached)" in out
    with pytest.raises(CommandError, match="recall target"):
        call_command("tune_search", "--target", "1.5")
    with pytest.raises(CommandError, match="--sample"):
        call_command("tune_search", "--sample", "0")


def test_the_memory_health_page_shows_the_measured_recall_and_when(vectors, client, viewer):
    client.force_login(viewer)
    assert "Recall not measured yet" in client.get("/memory/").content.decode()

    [row] = calibration.tune(actor=SYSTEM, sample=20, target=0.5)
    html = client.get("/memory/").content.decode()

    assert "Search recall" in html
    assert f"<td>{MODEL}</td>" in html
    assert f'<td class="num">{row.ef_search}</td>' in html
    # the bound the choice rests on, beside the mean (rounded as the page rounds: 0.9515 is 0.952)
    assert f"&ge; {floatformat(row.recall_low, 3)}</span>" in html
    assert f"{row.recall:.3f}" in html
    assert f"{row.measured_at:%Y-%m-%d %H:%M} by system" in html
