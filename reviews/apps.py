from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The signal receivers (library.signals → notifications and webhooks), and the tasks registered in this
        # process too, so that a task queued by name runs in place when tasks are eager (tests, demo).
        from . import notifications, tasks, webhooks  # noqa: F401
