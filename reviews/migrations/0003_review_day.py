"""Claims on candidates, threads, and mentions.

Every existing comment becomes an unanchored thread of its own (anchored to the whole version, open),
so the flat comment lists read the same as before. On PostgreSQL comment bodies get the same
full-text document as versions (library/migrations/0006_review_day.py), filled by a trigger and
indexed with GIN.
"""

import django.contrib.postgres.search
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def comments_to_threads(apps, schema_editor):
    Comment = apps.get_model("reviews", "Comment")
    Thread = apps.get_model("reviews", "Thread")
    for comment in Comment.objects.filter(thread__isnull=True).order_by("id").iterator():
        thread = Thread.objects.create(version_id=comment.version_id, created_by_id=comment.author_id, anchor="")
        Thread.objects.filter(pk=thread.pk).update(created_at=comment.created_at)
        Comment.objects.filter(pk=comment.pk).update(thread=thread)


def check_constraints_now(apps, schema_editor):
    # The data migration leaves deferred foreign-key checks pending; PostgreSQL refuses to alter or
    # index a table with pending trigger events in the same transaction, so run them now.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def threads_to_comments(apps, schema_editor):
    apps.get_model("reviews", "Comment").objects.update(thread=None)


POSTGRES_FORWARD = """
CREATE OR REPLACE FUNCTION procmem_comment_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_vector := to_tsvector('english', coalesce(NEW.body, '')) || procmem_identifier_lexemes(NEW.body);
    RETURN NEW;
END;
$$;
CREATE TRIGGER procmem_comment_search BEFORE INSERT OR UPDATE OF body ON reviews_comment
    FOR EACH ROW EXECUTE FUNCTION procmem_comment_search();
UPDATE reviews_comment SET search_vector = to_tsvector('english', coalesce(body, '')) || procmem_identifier_lexemes(body);
CREATE INDEX comment_search_gin ON reviews_comment USING gin (search_vector);
"""
POSTGRES_REVERSE = """
DROP INDEX IF EXISTS comment_search_gin;
DROP TRIGGER IF EXISTS procmem_comment_search ON reviews_comment;
DROP FUNCTION IF EXISTS procmem_comment_search();
"""


def _search_forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD)


def _search_reverse(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_REVERSE)


class Migration(migrations.Migration):

    dependencies = [
        ('library', '0006_review_day'),
        ('reviews', '0002_metrics_rollup'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='comment',
            name='search_vector',
            field=django.contrib.postgres.search.SearchVectorField(editable=False, null=True),
        ),
        migrations.AlterField(
            model_name='notification',
            name='kind',
            field=models.CharField(choices=[('new_candidates', 'New candidates waiting for review'), ('eval_finished', 'An eval run finished'), ('refused_at_load', 'A procedure was refused at load'), ('metric_warning', 'A metric warning'), ('mention', 'Someone mentioned you in a thread')], max_length=20),
        ),
        migrations.AlterField(
            model_name='notificationpreference',
            name='kind',
            field=models.CharField(choices=[('new_candidates', 'New candidates waiting for review'), ('eval_finished', 'An eval run finished'), ('refused_at_load', 'A procedure was refused at load'), ('metric_warning', 'A metric warning'), ('mention', 'Someone mentioned you in a thread')], max_length=20),
        ),
        migrations.CreateModel(
            name='Thread',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('anchor', models.CharField(blank=True, choices=[('', 'the whole version'), ('appliesWhen', 'appliesWhen'), ('step', 'a step'), ('requiredTools', 'requiredTools'), ('forbiddenActions', 'forbiddenActions')], default='', max_length=20)),
                ('step', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('resolved_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('resolved_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='threads', to='library.procedureversion')),
            ],
            options={
                'ordering': ['created_at', 'id'],
            },
        ),
        migrations.AddField(
            model_name='comment',
            name='thread',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='reviews.thread'),
        ),
        migrations.CreateModel(
            name='CandidateClaim',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('claimed_at', models.DateTimeField()),
                ('expires_at', models.DateTimeField()),
                ('assigned_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('assignee', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='candidate_claims', to=settings.AUTH_USER_MODEL)),
                ('version', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='claim', to='library.procedureversion')),
            ],
            options={
                'indexes': [models.Index(fields=['assignee', 'expires_at'], name='claim_assignee_expiry_idx')],
                'constraints': [models.CheckConstraint(condition=models.Q(('expires_at__gt', models.F('claimed_at'))), name='claim_expires_after_claimed')],
            },
        ),
        migrations.AddIndex(
            model_name='thread',
            index=models.Index(fields=['version', 'resolved_at'], name='thread_version_open_idx'),
        ),
        migrations.AddConstraint(
            model_name='thread',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('anchor', 'step'), ('step__gte', 1)), models.Q(models.Q(('anchor', 'step'), _negated=True), ('step__isnull', True)), _connector='OR'), name='thread_step_only_for_step_anchor'),
        ),
        migrations.AddConstraint(
            model_name='thread',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('resolved_at__isnull', True), ('resolved_by__isnull', True)), models.Q(('resolved_at__isnull', False), ('resolved_by__isnull', False)), _connector='OR'), name='thread_resolved_with_who'),
        ),
        migrations.RunPython(comments_to_threads, threads_to_comments),
        migrations.RunPython(check_constraints_now, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='comment',
            name='thread',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='reviews.thread'),
        ),
        migrations.RunPython(_search_forward, _search_reverse),
    ]
