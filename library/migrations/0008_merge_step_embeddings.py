from django.db import migrations


class Migration(migrations.Migration):
    """Joins the step embeddings with the mining-evidence and review-day branch."""

    dependencies = [
        ("library", "0006_step_embeddings"),
        ("library", "0007_merge_mining_evidence_and_review_day"),
    ]

    operations = []
