"""Labels only (no SQL on either database): a notification about a refusal says "A version was
refused at load", as the webhook event does, and a thread on a step reads "Step" in the admin."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('reviews', '0007_claim_queue_keys'),
    ]

    operations = [
        migrations.AlterField(
            model_name='notification',
            name='kind',
            field=models.CharField(choices=[('new_candidates', 'New candidates waiting for review'), ('eval_finished', 'An eval run finished'), ('refused_at_load', 'A version was refused at load'), ('metric_warning', 'A metric warning'), ('mention', 'Someone mentioned you in a thread')], max_length=20),
        ),
        migrations.AlterField(
            model_name='notificationpreference',
            name='kind',
            field=models.CharField(choices=[('new_candidates', 'New candidates waiting for review'), ('eval_finished', 'An eval run finished'), ('refused_at_load', 'A version was refused at load'), ('metric_warning', 'A metric warning'), ('mention', 'Someone mentioned you in a thread')], max_length=20),
        ),
        migrations.AlterField(
            model_name='thread',
            name='anchor',
            field=models.CharField(blank=True, choices=[('', 'the whole version'), ('appliesWhen', 'appliesWhen'), ('step', 'Step'), ('requiredTools', 'requiredTools'), ('forbiddenActions', 'forbiddenActions')], default='', max_length=20),
        ),
    ]
