from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The signal receivers (library.signals → notifications and webhooks), and the tasks registered in this
        # process too, so that a task queued by name runs in place when tasks are eager (tests, demo).
        # Imported in ready(), not at the top: they import models, which may not load while the app
        # registry fills (this module is imported then).
        from library.scans.personal_data import register_surface  # noqa: PLC0415

        from . import notifications, services, tasks, webhooks  # noqa: F401, PLC0415

        # What reviewers write and are told is reviewer-visible too: scan_personal_data reads it.
        register_surface("reviews", "Comment", ("body",))
        register_surface("reviews", "Notification", ("message",))
        register_surface("reviews", "WebhookDelivery", ("payload",))  # what leaves for other systems

        # A bad PROCMEM_OIDC_RULES stops the process at start, naming the variable and the rule.
        from .sso import sso_rules  # noqa: PLC0415 (imports models: ready() only)

        sso_rules()
