"""Fixtures shared by the memory tests: the local embedding-server stand-in of the backend tests."""

from tests.memory.test_embeddings import serve  # noqa: F401 (a fixture, used by test_embed_task)
