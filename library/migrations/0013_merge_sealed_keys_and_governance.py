from django.db import migrations


class Migration(migrations.Migration):
    """Joins sealed model keys and token expiry with the governance and step-embedding migrations."""

    dependencies = [
        ("library", "0008_merge_sealed_keys_and_review_day"),
        ("library", "0012_merge_governance_and_step_embeddings"),
    ]

    operations = []
