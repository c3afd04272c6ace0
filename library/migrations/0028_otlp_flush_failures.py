"""OTLP sessions whose storing fails are retried with back-off and then dead-lettered (issue 42,
finding 2; library/ingest/otlp.py "Failures"): `OtlpFlushFailure` rows, the span state `dead`, and
the audit action of an operator's retry."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0027_eval_run_environment"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="action",
            field=models.CharField(
                choices=[
                    ("propose", "Proposed"),
                    ("revise", "Edited (new version)"),
                    ("approve", "Approved"),
                    ("reject", "Rejected"),
                    ("retire", "Retired"),
                    ("rollback", "Rolled back"),
                    ("auto_retire", "Retired by a newer approval"),
                    ("import", "Imported"),
                    ("grant", "Approver right granted"),
                    ("revoke", "Approver right revoked"),
                    ("token_create", "API token created"),
                    ("token_revoke", "API token revoked"),
                    ("tools_change", "Tool list changed"),
                    ("refused_at_load", "Refused at load"),
                    ("eval_start", "Eval run started"),
                    ("eval_finish", "Eval run finished"),
                    ("eval_cancel", "Eval run cancelled"),
                    ("mine", "Mining run"),
                    ("comment", "Commented"),
                    ("settings", "Agent settings changed"),
                    ("case_change", "Regression case changed"),
                    ("erase", "Erased (tombstone kept)"),
                    ("erase_copy", "Erased text removed (flagged for review)"),
                    ("review", "Re-reviewed (kept ACTIVE)"),
                    ("demotion_propose", "Demotion proposed"),
                    ("demotion_dismiss", "Demotion dismissed"),
                    ("demotion_confirm", "Demotion confirmed"),
                    ("conflict_scan", "Conflict scan changed the open conflicts"),
                    ("conflict_ack", "Approved despite a conflict (acknowledged)"),
                    ("claim", "Candidate claimed"),
                    ("assign", "Candidate assigned"),
                    ("release", "Candidate released"),
                    ("thread_resolve", "Thread resolved"),
                    ("thread_reopen", "Thread reopened"),
                    ("stage", "Released to a non-production environment"),
                    ("promote", "Promoted to production"),
                    ("withdraw", "Withdrawn from an environment"),
                    ("rollout_start", "Rollout started"),
                    ("rollout_complete", "Rollout completed"),
                    ("rollout_rollback", "Rollout rolled back"),
                    ("scope", "Scope changed (namespace, roles, priority, confidence)"),
                    ("namespace_create", "Namespace created"),
                    ("outcomes", "Session outcomes reported"),
                    ("otlp_retry", "Dead-lettered OTLP session retried"),
                ],
                db_index=True,
                max_length=20,
            ),
        ),
        migrations.AlterField(
            model_name="otlpspan",
            name="state",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("stored", "Stored"),
                    ("refused", "Refused"),
                    ("dead", "Dead-lettered"),
                ],
                default="pending",
                max_length=8,
            ),
        ),
        migrations.CreateModel(
            name="OtlpFlushFailure",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "session_id",
                    models.CharField(blank=True, help_text="Empty: the agent's flush as a whole", max_length=200),
                ),
                (
                    "state",
                    models.CharField(
                        choices=[("retrying", "Retrying"), ("dead", "Dead-lettered")], default="retrying", max_length=8
                    ),
                ),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("error", models.CharField(blank=True, max_length=300)),
                ("first_failed_at", models.DateTimeField()),
                ("last_failed_at", models.DateTimeField()),
                ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                ("trace_ids", models.JSONField(blank=True, default=list, help_text="The traces of the session")),
                (
                    "agent",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="library.agent"
                    ),
                ),
            ],
            options={
                "ordering": ["agent_id", "-last_failed_at"],
                "constraints": [
                    models.UniqueConstraint(fields=("agent", "session_id"), name="otlp_flush_failure_unique_per_agent")
                ],
            },
        ),
    ]
