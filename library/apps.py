from django.apps import AppConfig


class LibraryConfig(AppConfig):
    name = "library"
    verbose_name = "Procedure library"
    default_auto_field = "django.db.models.BigAutoField"
