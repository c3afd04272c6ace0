from django.db import migrations


class Migration(migrations.Migration):
    """Joins the governance migrations (erasure, review-by dates, conflicts) with the step embeddings."""

    dependencies = [
        ("library", "0008_merge_step_embeddings"),
        ("library", "0011_audit_actions_of_governance"),
    ]

    operations = []
