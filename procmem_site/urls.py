from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from reviews.sso import SignInView


class FaviconView(RedirectView):
    """Browsers and crawlers ask for /favicon.ico whatever the page's <link rel="icon"> says. The
    hashed name is looked up per request: at import the manifest may not exist yet (collectstatic
    and `check --deploy` import this module before any file is collected)."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs):
        return static("favicon.svg")


# A page the user may see but not use says why (the access helper's reason); an unknown or hidden
# one is templates/404.html, a failure templates/500.html. Under /api/ every error becomes JSON
# (procmem_site.middleware.ApiErrorsMiddleware).
handler403 = "reviews.views.refusals.permission_denied"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="reviews:queue", permanent=False)),
    path("favicon.ico", FaviconView.as_view()),
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("library.api.urls")),
    # the served set as Agent Skills: the discovery index and each skill's versioned folder (library/api/skills.py)
    path(".well-known/agent-skills/", include("library.api.skills")),
    # single sign-on: /oidc/authenticate/ and /oidc/callback/ (404 unless PROCMEM_OIDC_CLIENT_ID is set)
    path("oidc/", include("mozilla_django_oidc.urls")),
    # without local passwords Django's admin signs in through the same page (single sign-on)
    *(
        []
        if settings.PROCMEM_LOCAL_PASSWORDS
        else [
            path("django-admin/login/", RedirectView.as_view(pattern_name="login", query_string=True, permanent=False)),
        ]
    ),
    path("django-admin/", admin.site.urls),
    path("", include("reviews.urls")),
]
