"""Importing Agent Skills on the agent's page: an uploaded `.zip`/`.skill` archive becomes
candidates through library.skill_import (the same gate as `manage.py import_skills`)."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from library.skill_import.importing import skills_import_archive
from library.skill_import.sources import MAX_ARCHIVE_BYTES

from ..access import get_agent_for_user, require_reviewer, signed_in


class SkillsImportForm(forms.Form):
    archive = forms.FileField(
        label="Skills archive",
        help_text="A .zip or .skill archive of one skill folder or of several (each with its SKILL.md)",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,.skill"}),
    )
    intent = forms.SlugField(
        required=False, max_length=100, help_text="Put new procedures under this intent (default: each skill's name)"
    )


@require_http_methods(["GET", "POST"])
@signed_in
def skills_import(request: HttpRequest, agent: str) -> HttpResponse:
    """Reviewers propose: the upload is refused (403) for anyone else who can see the agent."""
    target = get_agent_for_user(request, agent, for_="view")
    require_reviewer(request)
    form = SkillsImportForm(request.POST or None, request.FILES or None)
    report, status = None, 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            upload = form.cleaned_data["archive"]
            if upload.size > MAX_ARCHIVE_BYTES:
                form.add_error("archive", f"The archive is larger than {MAX_ARCHIVE_BYTES // (1024 * 1024)} MB.")
            else:
                report = skills_import_archive(
                    agent=target,
                    handle=upload,
                    name=upload.name,
                    user=request.user,
                    intent=form.cleaned_data["intent"] or "",
                )
                status = 200 if report.created or report.unchanged else 400
    return render(
        request,
        "reviews/skills_import.html",
        {"agent": target, "form": form, "report": report, "tab": "skills-import"},
        status=status,
    )
