"""`manage.py rebuild_vector_indexes`: rebuild the HNSW indexes built with other graph options than the shipped ones."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from memory import indexing
from memory.vector_index import hnsw_options


class Command(BaseCommand):
    help = (
        "Rebuild, CONCURRENTLY and under their own names, the HNSW indexes of the embedding table whose graph "
        "options differ from the shipped ones (memory/vector_index.py); searches keep an index meanwhile. "
        "Migration memory 0015 did this once; run it after changing the graph options."
    )

    def handle(self, *args: object, **options: object) -> None:
        rebuilt = indexing.rebuild_outdated()
        for name in rebuilt:
            self.stdout.write(f"rebuilt {name} {hnsw_options()}")
        self.stdout.write(f"{len(rebuilt)} index(es) rebuilt; the others already have the shipped options.")
