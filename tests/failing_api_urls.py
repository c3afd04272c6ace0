"""The site's URLs plus one API view that fails, for the test of the JSON 500."""

from django.urls import path

from procmem_site.urls import urlpatterns as site_urlpatterns


def failing_view(request):
    raise RuntimeError("a bug the view did not expect")


urlpatterns = [path("api/v1/failing", failing_view), *site_urlpatterns]
