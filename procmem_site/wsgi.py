import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")
application = get_wsgi_application()

# Each web process (a gunicorn worker, runserver) loads the embedding model, the views and the
# templates now, not inside its first request (procmem_site/warmup.py).
from procmem_site.warmup import warm_up  # noqa: E402

warm_up()  # and freezes what was loaded: no full garbage collection walks it again
