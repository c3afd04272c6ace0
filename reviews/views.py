"""Reviewer pages."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from library.models import ProcedureVersion, Status


@login_required
def queue(request: HttpRequest) -> HttpResponse:
    versions = (
        ProcedureVersion.objects.filter(status=Status.CANDIDATE)
        .select_related("procedure__agent", "procedure__intent")
        .order_by("-quarantined", "-created_at")
    )
    return render(request, "reviews/queue.html", {"versions": versions})
