"""pgvector backs every similarity search of the product; enable it before any model needs it."""

from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    initial = True
    dependencies: list = []
    operations = [VectorExtension()]
