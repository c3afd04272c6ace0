"""Labels only (no SQL on either database): an imported version reads "Imported"."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0019_candidate_procedure_index"),
    ]

    operations = [
        migrations.AlterField(
            model_name="procedureversion",
            name="source",
            field=models.CharField(
                choices=[
                    ("mined", "Mined from sessions"),
                    ("captured", "Captured automatically"),
                    ("imported", "Imported"),
                    ("manual", "Written by hand"),
                    ("revision", "Edited by a reviewer"),
                ],
                max_length=10,
            ),
        ),
    ]
