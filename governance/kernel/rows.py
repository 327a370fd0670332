"""Model instances from SQL written once, for the few reads every API request makes, and the few
UPDATEs every session event makes.

The ORM compiles a queryset to SQL on every call: for a lookup joining two models that is about
half a millisecond of CPU, more than the indexed read itself costs the database (issue 18.4 found
API-key authentication at a quarter of a job submission). The hot lookups therefore keep their
SQL in a constant, written from the models' own column lists when the module is imported, so a
field added to a model is read without touching them, and turn each row into instances exactly
as the ORM would: ``Model.from_db`` after the fields' ``from_db_value`` (JSON columns arrive as
text on PostgreSQL, see ``django.db.backends.postgresql.psycopg_any``).

The same holds for the UPDATEs the session processor and the scheduler tick make at every event
and for every batch: the ORM's costs 0.1 to 0.15 ms more per row than a statement written once,
and a batch of rows is one pipelined round trip here. Those writes skip ``save()`` and the
``pre_save``/``post_save`` signals, so they are allowed only for the models named in
``UPDATED_WITHOUT_SIGNALS``, and tests/governance/kernel/test_rows.py fails as soon as a receiver listens
to one of them. Every other write, INSERTs included (0.05 to 0.07 ms more), goes through the ORM.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from django.db import DatabaseError, connection, models

M = TypeVar("M", bound=models.Model)

# The models ``update`` and ``update_many`` write (labels): only these, and while no signal
# receiver listens to them.
UPDATED_WITHOUT_SIGNALS = frozenset({"ai_sessions.aisession", "ai_sessions.automation", "ai_sessions.sessionmessage"})


def select_list(model: type[models.Model], alias: str) -> str:
    """Every concrete column of ``model`` under the table alias ``alias``, in field order."""
    return ", ".join(f'{alias}."{field.column}"' for field in model._meta.concrete_fields)


@functools.cache
def _layout(model: type[models.Model]) -> tuple[list[str], int, list[tuple[int, Callable[..., Any]]]]:
    """(attribute names, index of the primary key, the converters of the fields that convert what
    the database returns) of ``model``'s concrete fields, worked out once per model."""
    fields = list(model._meta.concrete_fields)
    converting = [(n, field.from_db_value) for n, field in enumerate(fields) if hasattr(field, "from_db_value")]
    return [field.attname for field in fields], fields.index(model._meta.pk), converting


def instance(model: type[M], row: Sequence[Any], start: int = 0) -> M | None:
    """The ``model`` instance whose columns (``select_list`` order) start at ``row[start]``; None
    when its primary key is NULL (the far side of a LEFT JOIN that found nothing)."""
    names, pk, converting = _layout(model)
    values = list(row[start : start + len(names)])
    if values[pk] is None:
        return None
    for n, convert in converting:
        if values[n] is not None:
            values[n] = convert(values[n], None, connection)
    return model.from_db(connection.alias, names, values)


def foreign_key(model: type[models.Model], name: str) -> tuple[type[models.Model], str]:
    """(the model the foreign key ``name`` of ``model`` points to, its column)."""
    field = model._meta.get_field(name)
    if not isinstance(field, models.ForeignKey):
        raise TypeError(f"{model.__name__}.{name} is not a foreign key")
    return cast("type[models.Model]", field.related_model), field.column


def instances(row: Sequence[Any], *chain: type[models.Model]) -> list[Any]:
    """The instances of the models of ``chain`` whose columns follow each other in ``row`` (one
    ``select_list`` each, in that order); None for a model a LEFT JOIN did not find."""
    found, start = [], 0
    for model in chain:
        found.append(instance(model, row, start))
        start += width(model)
    return found


def width(model: type[models.Model]) -> int:
    """How many columns ``select_list(model, ...)`` reads: where the next model's start."""
    return len(model._meta.concrete_fields)


@functools.cache
def _update_sql(model: type[models.Model], names: tuple[str, ...]) -> tuple[str, list[models.Field]]:
    """The UPDATE of ``names`` of one ``model`` row by primary key, and those fields. Refused for a
    model outside ``UPDATED_WITHOUT_SIGNALS``, so no write skips a receiver the tests do not watch
    for (checked once per model and field list: this is cached)."""
    if model._meta.label_lower not in UPDATED_WITHOUT_SIGNALS:
        raise TypeError(f"{model._meta.label} is not in rows.UPDATED_WITHOUT_SIGNALS; save it through the ORM")
    fields = [cast("models.Field", model._meta.get_field(name)) for name in names]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    table, pk = quote(model._meta.db_table), quote(model._meta.pk.column)
    return f"UPDATE {table} SET {assignments} WHERE {pk} = %s", fields


def update(obj: models.Model, names: Sequence[str]) -> None:
    """``obj.save(update_fields=names)`` with its UPDATE written once per model and field list:
    each field's ``pre_save`` (``auto_now`` stamps) and ``get_db_prep_save`` as ``save`` applies
    them, and the same DatabaseError when no row was updated. No model signal is sent: only for
    the models of ``UPDATED_WITHOUT_SIGNALS``."""
    sql, fields = _update_sql(type(obj), tuple(names))
    params = [field.get_db_prep_save(field.pre_save(obj, False), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, obj.pk])
        if cursor.rowcount == 0:
            raise DatabaseError("Save with update_fields did not affect any rows.")


def update_many(objs: Sequence[models.Model], names: Sequence[str]) -> None:
    """``update`` for each of ``objs`` (one model), sent as one pipelined ``executemany``: one
    round trip for the batch instead of one per row (``bulk_update`` costs 2 to 10 times more),
    and the same DatabaseError when a row was not there. No model signal is sent either."""
    if not objs:
        return
    sql, fields = _update_sql(type(objs[0]), tuple(names))
    params = [
        [*(field.get_db_prep_save(field.pre_save(obj, False), connection) for field in fields), obj.pk] for obj in objs
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)
        if cursor.rowcount != len(objs):
            raise DatabaseError(f"Save with update_fields affected {cursor.rowcount} of {len(objs)} rows.")


def fetch_one(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """The first row of ``sql``, or None."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()
