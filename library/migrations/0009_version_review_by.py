"""Review-by dates: every ACTIVE version carries the day it is due for re-review (check constraint
`active_version_has_review_by`); an agent says after how many days (default 180). Existing ACTIVE
versions get approval day + 180. SQLite rebuilds the version table to add the constraint, so the
invariant triggers (0002 and 0006) are dropped before and created again after."""

import importlib
from datetime import timedelta

from django.conf import settings
from django.db import migrations, models

_erasure = importlib.import_module("library.migrations.0008_version_erasure")


def _drop_sqlite(apps, schema_editor):
    _erasure._drop_sqlite(apps, schema_editor)


def _create_sqlite(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        _erasure.forward(apps, schema_editor)


def _fill_review_by(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        # the constraint below is an ALTER TABLE: no deferred FK checks may be pending from these UPDATEs
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    Version = apps.get_model("library", "ProcedureVersion")
    for version in Version.objects.filter(status="ACTIVE", review_by__isnull=True).select_related("procedure__agent"):
        since = version.approved_at or version.status_changed_at or version.created_at
        Version.objects.filter(pk=version.pk).update(review_by=since.date() + timedelta(days=180))


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0008_version_erasure"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(_drop_sqlite, _create_sqlite),
        migrations.AddField(
            model_name="agent",
            name="review_after_days",
            field=models.PositiveSmallIntegerField(
                default=180,
                help_text="An ACTIVE version is due for re-review this many days after approval or its last review",
            ),
        ),
        migrations.AddField(
            model_name="procedureversion",
            name="review_by",
            field=models.DateField(
                blank=True,
                help_text="ACTIVE versions: due for re-review on this day (set on approval, roll back and review)",
                null=True,
            ),
        ),
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
                    ("review", "Re-reviewed (kept ACTIVE)"),
                    ("demotion_propose", "Demotion proposed"),
                    ("demotion_dismiss", "Demotion dismissed"),
                    ("demotion_confirm", "Demotion confirmed"),
                ],
                db_index=True,
                max_length=20,
            ),
        ),
        migrations.RunPython(_fill_review_by, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="agent",
            constraint=models.CheckConstraint(
                condition=models.Q(("review_after_days__gte", 1), ("review_after_days__lte", 3650)),
                name="agent_review_after_days_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="procedureversion",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("status", "ACTIVE"), _negated=True), ("review_by__isnull", False), _connector="OR"
                ),
                name="active_version_has_review_by",
            ),
        ),
        migrations.RunPython(_create_sqlite, _drop_sqlite),
    ]
