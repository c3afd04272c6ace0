from django.db import migrations, models


class Migration(migrations.Migration):
    """The ranker's step signal: each step's embedding, stored beside the appliesWhen one."""

    dependencies = [
        ("library", "0005_session_received_idx"),
    ]

    operations = [
        migrations.AddField(
            model_name="versionembedding",
            name="steps_vectors",
            field=models.BinaryField(
                help_text="One vector per step, in step order (steps × dimensions float32); null until computed",
                null=True,
            ),
        ),
    ]
