"""What a coding agent's sessions of each repository saw (CodingFileIndex): the task's files in recall pointers (issue 38)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0030_session_json_lz4"),
    ]

    operations = [
        migrations.CreateModel(
            name="CodingFileIndex",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("repository", models.CharField(blank=True, max_length=200)),
                ("files", models.JSONField(default=list, help_text="The known source files, sorted")),
                ("definitions", models.JSONField(default=dict, help_text="{symbol: [positions in files]}")),
                ("sessions", models.PositiveIntegerField(default=0, help_text="Sessions read")),
                (
                    "digest",
                    models.CharField(help_text="sha256 of the repository, files and definitions", max_length=64),
                ),
                ("built_at", models.DateTimeField()),
                (
                    "agent",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="file_indexes", to="library.agent"
                    ),
                ),
                (
                    "mining_run",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="file_indexes",
                        to="library.miningrun",
                    ),
                ),
            ],
            options={
                "ordering": ["agent_id", "repository"],
                "constraints": [
                    models.UniqueConstraint(fields=("agent", "repository"), name="one_file_index_per_agent_repository")
                ],
            },
        ),
    ]
