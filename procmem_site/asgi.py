import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")
application = get_asgi_application()

# as procmem_site.wsgi: loaded before the first request (procmem_site/warmup.py)
from procmem_site.warmup import warm_up  # noqa: E402

warm_up()  # and freezes what was loaded: no full garbage collection walks it again
