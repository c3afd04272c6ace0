"""OTLP: outcomes held while their session waits (`HeldOutcome`, issue 39 item 10;
library/ingest/otlp_outcomes.py), and an index for the completion check's look-up of a
conversation's waiting spans (issue 42, finding 4; library/ingest/otlp.py `_due_sessions`)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0028_otlp_flush_failures"),
    ]

    operations = [
        migrations.CreateModel(
            name="HeldOutcome",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("session_id", models.CharField(max_length=200)),
                (
                    "outcome",
                    models.JSONField(help_text="The parsed outcome (library/ingest/outcomes.py OutcomeIn), `at` in ISO 8601"),
                ),
                ("via", models.CharField(max_length=100)),
                ("actor_label", models.CharField(blank=True, max_length=150)),
                ("received_at", models.DateTimeField()),
                ("hold_until", models.DateTimeField()),
            ],
        ),
        migrations.AddIndex(
            model_name="otlpspan",
            index=models.Index(
                condition=models.Q(("state", "pending")),
                fields=["agent", "conversation_id"],
                name="otlp_span_pending_conv_idx",
            ),
        ),
        migrations.AddField(
            model_name="heldoutcome",
            name="agent",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="library.agent"),
        ),
        migrations.AddIndex(
            model_name="heldoutcome",
            index=models.Index(fields=["agent", "session_id"], name="held_outcome_session_idx"),
        ),
    ]
