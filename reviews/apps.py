from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Signal receivers (library.signals → notifications) and the tasks of operating the library.
        from . import metrics_tasks, notifications  # noqa: F401
        from library.personal_data_scan import register_surface

        # What reviewers write and are told is reviewer-visible too: scan_personal_data reads it.
        register_surface("reviews", "Comment", ("body",))
        register_surface("reviews", "Notification", ("message",))
