"""The site's URLs plus a view that fails, under the API and as a page, for the tests of the 500s."""

from django.urls import path

from procmem_site.urls import urlpatterns as site_urlpatterns


def failing_view(request):
    raise RuntimeError("a bug the view did not expect")


urlpatterns = [path("api/v1/failing", failing_view), path("failing-page/", failing_view), *site_urlpatterns]
