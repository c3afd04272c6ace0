"""The Celery app. Autodiscovery imports the `tasks` module of every installed app (library/tasks.py
registers the eval-run tasks of library/evals/tasks.py as well). Services may queue tasks by name."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")

app = Celery("procmem")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _make_filesystem_broker_folders(sender, **kwargs):
    # kombu's filesystem transport does not create its folders itself (the control folder it
    # creates only when its parent exists; left unset it would be ./control in the cwd).
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            os.makedirs(options[key], exist_ok=True)
