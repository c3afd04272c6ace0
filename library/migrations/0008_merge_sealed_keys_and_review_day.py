from django.db import migrations


class Migration(migrations.Migration):
    """Joins the sealed-keys/token-expiry branch with the mining-evidence and review-day branches."""

    dependencies = [
        ("library", "0006_sealed_keys_token_expiry"),
        ("library", "0007_merge_mining_evidence_and_review_day"),
    ]

    operations = []
