from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _create_reviewers_group(sender, using="default", **kwargs) -> None:
    # imported here: library/apps.py is imported while the app registry fills, before any model
    # (auth's, the library's, which the rulebook imports) may be
    from django.contrib.auth.models import Permission  # noqa: PLC0415

    from .permissions import ensure_reviewers_group  # noqa: PLC0415

    # auth's own post_migrate handler has created the permission rows by now (it is connected first)
    if Permission.objects.using(using).filter(codename="review_procedureversion").exists():
        ensure_reviewers_group()


class LibraryConfig(AppConfig):
    name = "library"
    verbose_name = "Procedure library"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_create_reviewers_group, sender=self, dispatch_uid="library.reviewers_group")
