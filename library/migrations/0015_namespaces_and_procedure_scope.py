"""Namespaces (teams or tenants) and a procedure's scope: its namespace, roles, priority and
confidence. Existing agents and procedures move into the `default` namespace, so every agent is
served what it was served before."""

import django.core.validators
import django.db.models.deletion
import library.models
from django.conf import settings
from django.db import migrations, models


def _into_default_namespace(apps, schema_editor):
    Namespace = apps.get_model("library", "Namespace")
    Agent = apps.get_model("library", "Agent")
    Procedure = apps.get_model("library", "Procedure")
    default, _ = Namespace.objects.get_or_create(
        name="default", defaults={"description": "Procedures of every agent not assigned to a team"}
    )
    Agent.objects.filter(namespace__isnull=True).update(namespace=default)
    Procedure.objects.filter(namespace__isnull=True).update(namespace=default)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("library", "0014_coding_procedures"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Namespace",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "name",
                    models.CharField(
                        max_length=64,
                        unique=True,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[a-z][a-z0-9_\\-]*$", "Use lower-case letters, digits, _ and -"
                            )
                        ],
                    ),
                ),
                ("description", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "ordering": ["name"],
                "permissions": [
                    ("review_namespace_procedures", "Can review candidates of every procedure in this namespace"),
                    ("approve_namespace_procedures", "Can approve versions of every procedure in this namespace"),
                    (
                        "manage_namespace_procedures",
                        "Can retire, roll back and change the scope of every procedure in this namespace",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="NamespaceGroupObjectPermission",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
            ],
            options={
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="NamespaceUserObjectPermission",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
            ],
            options={
                "abstract": False,
            },
        ),
        migrations.AddField(
            model_name="procedure",
            name="confidence",
            field=models.CharField(
                choices=[("low", "Low"), ("medium", "Medium"), ("high", "High")], default="medium", max_length=6
            ),
        ),
        migrations.AddField(
            model_name="procedure",
            name="priority",
            field=models.SmallIntegerField(default=0, help_text="Higher wins a near-tie in selection"),
        ),
        migrations.AddField(
            model_name="procedure",
            name="roles",
            field=models.JSONField(
                blank=True, default=list, help_text="Role names an agent instance may present; empty = all"
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
                    ("conflict_scan", "Conflict scan changed the open conflicts"),
                    ("conflict_ack", "Approved despite a conflict (acknowledged)"),
                    ("claim", "Candidate claimed"),
                    ("assign", "Candidate assigned"),
                    ("release", "Candidate released"),
                    ("thread_resolve", "Thread resolved"),
                    ("thread_reopen", "Thread reopened"),
                    ("scope", "Scope changed (namespace, roles, priority, confidence)"),
                    ("namespace_create", "Namespace created"),
                ],
                db_index=True,
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="agent",
            name="namespace",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="agents", to="library.namespace"
            ),
        ),
        migrations.AddField(
            model_name="procedure",
            name="namespace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="procedures",
                to="library.namespace",
            ),
        ),
        migrations.RunPython(_into_default_namespace, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="agent",
            name="namespace",
            field=models.ForeignKey(
                default=library.models.default_namespace_pk,
                help_text="The team or tenant; the agent API serves this agent the procedures of this namespace",
                on_delete=django.db.models.deletion.PROTECT,
                related_name="agents",
                to="library.namespace",
            ),
        ),
        migrations.AlterField(
            model_name="procedure",
            name="namespace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="procedures", to="library.namespace"
            ),
        ),
        migrations.AddConstraint(
            model_name="procedure",
            constraint=models.CheckConstraint(
                condition=models.Q(("priority__gte", -100), ("priority__lte", 100)), name="procedure_priority_range"
            ),
        ),
        migrations.AddConstraint(
            model_name="procedure",
            constraint=models.CheckConstraint(
                condition=models.Q(("confidence__in", ["low", "medium", "high"])), name="procedure_confidence_valid"
            ),
        ),
        migrations.AddField(
            model_name="namespacegroupobjectpermission",
            name="content_object",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="library.namespace"),
        ),
        migrations.AddField(
            model_name="namespacegroupobjectpermission",
            name="group",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="auth.group"),
        ),
        migrations.AddField(
            model_name="namespacegroupobjectpermission",
            name="permission",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="auth.permission"),
        ),
        migrations.AddField(
            model_name="namespaceuserobjectpermission",
            name="content_object",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="library.namespace"),
        ),
        migrations.AddField(
            model_name="namespaceuserobjectpermission",
            name="permission",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="auth.permission"),
        ),
        migrations.AddField(
            model_name="namespaceuserobjectpermission",
            name="user",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to=settings.AUTH_USER_MODEL),
        ),
        migrations.AlterUniqueTogether(
            name="namespacegroupobjectpermission",
            unique_together={("group", "permission", "content_object")},
        ),
        migrations.AlterUniqueTogether(
            name="namespaceuserobjectpermission",
            unique_together={("user", "permission", "content_object")},
        ),
    ]
