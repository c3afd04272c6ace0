"""How the review pages refuse and where they send the user back: the services' refusals as
responses a person can read, and the form and redirect helpers the page modules share.

Refusals: 404 for what the user may not see (reviews.access), 403 for what they may see but not
change, 409 when the state does not allow it, 400 for invalid input — for htmx requests as a message
retargeted to #flash.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django import forms
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from django_htmx.http import reswap, retarget

from library.services import LifecycleError

from ..access import signed_in

# The services name the record's fields; the forms use Python names.
_FORM_FIELD = {
    "appliesWhen": "applies_when",
    "requiredTools": "required_tools",
    "forbiddenActions": "forbidden_actions",
}


def _error_text(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        if hasattr(exc, "error_dict"):
            return " ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items())
        return " ".join(exc.messages)
    return str(exc) or exc.__class__.__name__


def refuse(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """A refusal the user can read: for htmx a message swapped into #flash (so that it does not
    replace the fragment the request targeted), otherwise a page."""
    if request.htmx:
        response = render(request, "reviews/_flash.html", {"level": "error", "text": message}, status=status)
        return reswap(retarget(response, "#flash"), "innerHTML")
    return render(request, "reviews/refused.html", {"status": status, "text": message}, status=status)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The site's 403 (handler403): a PermissionDenied that no `refusals` caught, raised by a page's
    access helper ("Only the admins of support_agent may change this."), reads as the action views'
    refusals do. Django's own answer was a bare "403 Forbidden" that dropped the reason."""
    return refuse(request, 403, str(exception or "") or "You may not do this.")


def refusals(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Turns the services' refusals into responses: PermissionDenied → 403, LifecycleError → 409,
    ValidationError → 400. Http404 passes through (hidden stays hidden)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            return refuse(request, 403, str(exc) or "You may not do this.")
        except LifecycleError as exc:
            return refuse(request, 409, _error_text(exc))
        except ValidationError as exc:
            return refuse(request, 400, _error_text(exc))

    return wrapper


def post_action(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """An action view: POST only, signed in, the services' refusals as responses (`refusals`)."""
    return require_POST(signed_in(refusals(view)))


def decision_status(context: dict, decide) -> int:
    """Runs a lifecycle service for a confirmation page: 200 when it went through; otherwise the
    reason goes into the page's context and the status says why (400 bad input, 409 the state does
    not allow it)."""
    try:
        decide()
    except ValidationError as exc:
        context["error"] = " ".join(exc.messages)
        return 400
    except LifecycleError as exc:
        context["error"] = str(exc)
        return 409
    return 200


def add_service_errors(form, exc: ValidationError) -> None:
    errors = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
    for field, messages_ in errors.items():
        target = _FORM_FIELD.get(field, field)
        form.add_error(target if target in form.fields else None, messages_)


def safe_next(request: HttpRequest, fallback: str) -> str:
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    if candidate and url_has_allowed_host_and_scheme(
        candidate, {request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return fallback


def posted_form(request: HttpRequest, form_class: type[forms.Form], *, invalid: str) -> dict:
    """The cleaned data of a small action form (a reason, a comment). Invalid input raises
    ValidationError(invalid), which `refusals` answers with a 400 the user can read."""
    form = form_class(request.POST)
    if not form.is_valid():
        raise ValidationError(form_problems(form) or invalid)
    return form.cleaned_data


def form_problems(form: forms.Form) -> str:
    """What is wrong with a small form beyond a missing field ("Reason: Ensure this value has at
    most 1000 characters (it has 5000)."), as one line; empty when only fields are missing."""
    return " ".join(
        f"{(form.fields[name].label if name in form.fields else '') or name}: {message}"
        for name, errors in form.errors.as_data().items()
        for error in errors
        if error.code != "required"
        for message in error.messages
    )
