"""The agent's skills upload (reviews/views/skill_import.py) and what the candidate page shows of
an imported skill."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from library.models import ProcedureVersion, Status
from tests.library.test_skill_import import ANTHROPIC, REFUND

pytestmark = pytest.mark.django_db


def archive(members: dict[str, str], name: str = "skills.zip") -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, text in members.items():
            zf.writestr(path, text)
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="application/zip")


def brand() -> dict[str, str]:
    return {"brand-guidelines/SKILL.md": (ANTHROPIC / "brand-guidelines" / "SKILL.md").read_text(encoding="utf-8")}


def test_a_reviewer_uploads_skills_and_gets_candidates_and_the_refusals(reviewer_client, reviewer, agent):
    url = reverse("reviews:skills_import", args=[agent.name])
    page = reviewer_client.get(url)
    assert page.status_code == 200 and b'enctype="multipart/form-data"' in page.content
    members = {**brand(), "refund-over-limit/SKILL.md": REFUND, "wrong/SKILL.md": REFUND}
    response = reviewer_client.post(url, {"archive": archive(members)})
    assert response.status_code == 200
    text = response.content.decode()
    assert "2 imported, 0 unchanged, 1 refused" in text
    assert "skills.zip: wrong/SKILL.md" in text and "must equal the name of its folder" in text
    versions = ProcedureVersion.objects.filter(procedure__agent=agent)
    assert {v.procedure.key for v in versions} == {"brand.guidelines", "refund.over_limit"}
    assert {v.status for v in versions} == {Status.CANDIDATE} and {v.proposed_by for v in versions} == {reviewer}
    # the same upload again changes nothing
    again = reviewer_client.post(url, {"archive": archive(members)})
    assert "0 imported, 2 unchanged, 1 refused" in again.content.decode()
    assert ProcedureVersion.objects.filter(procedure__agent=agent).count() == 2


def test_a_hostile_archive_is_refused_with_its_reason(reviewer_client, agent):
    url = reverse("reviews:skills_import", args=[agent.name])
    response = reviewer_client.post(url, {"archive": archive({"../up/SKILL.md": REFUND}, name="evil.skill")})
    assert response.status_code == 400
    assert "climbs out of the archive with &#x27;..&#x27; (path traversal)" in response.content.decode()
    assert not ProcedureVersion.objects.exists()


def test_the_wrong_user_gets_403_and_nothing_is_stored(outsider_client, client, agent):
    url = reverse("reviews:skills_import", args=[agent.name])
    assert outsider_client.get(url).status_code == 403
    assert outsider_client.post(url, {"archive": archive({"refund-over-limit/SKILL.md": REFUND})}).status_code == 403
    assert not ProcedureVersion.objects.exists()
    # signed out: to the sign-in page
    assert client.post(url, {"archive": archive({"refund-over-limit/SKILL.md": REFUND})}).status_code == 302
    assert not ProcedureVersion.objects.exists()


def test_an_agent_the_user_cannot_see_is_404(reviewer_client):
    assert reviewer_client.get(reverse("reviews:skills_import", args=["nobody"])).status_code == 404


def test_the_candidate_page_shows_the_kept_body_and_the_diff(reviewer_client, agent):
    url = reverse("reviews:skills_import", args=[agent.name])
    reviewer_client.post(url, {"archive": archive(brand())})
    version = ProcedureVersion.objects.get(procedure__key="brand.guidelines")
    page = reviewer_client.get(reverse("reviews:version", args=[version.pk])).content.decode()
    assert 'id="skill-import"' in page and "Imported from skill <code>brand-guidelines</code>" in page
    # the body is shown whole (auto-escaped)
    assert "Applied via python-pptx&#x27;s RGBColor class" in page and "#d97757" in page
    assert "Complete terms in LICENSE.txt" in page
    # a changed skill: a new version whose page compares it with the one before
    changed = brand()
    changed["brand-guidelines/SKILL.md"] = changed["brand-guidelines/SKILL.md"].replace(
        "## Overview", "1. Pick the brand colours.\n2. Apply the fonts.\n\n## Overview"
    )
    reviewer_client.post(url, {"archive": archive(changed)})
    second = ProcedureVersion.objects.get(procedure__key="brand.guidelines", number=2)
    assert second.based_on_id == version.pk
    page = reviewer_client.get(reverse("reviews:version", args=[second.pk])).content.decode()
    assert "Comparing <strong>v2</strong> with <strong>v1</strong>" in page and "Pick the brand colours." in page


# the measure is cached under a key every cache backend accepts (the demo's log warned on each load)
@pytest.mark.filterwarnings("error::django.core.cache.backends.base.CacheKeyWarning")
def test_the_eval_panel_loads_the_trigger_measure(reviewer_client, candidate, agent, intent):
    from library.models import RegressionCase

    RegressionCase.objects.create(agent=agent, intent=intent, task="Refund 900 dollars, above my limit")
    page = reviewer_client.get(reverse("reviews:version", args=[candidate.pk])).content.decode()
    url = reverse("reviews:version_trigger", args=[candidate.pk])
    assert f'hx-get="{url}"' in page and f'href="{url}"' in page
    # the measure can take a while (it ranks every task of the intent): the panel says it is coming
    assert 'id="trigger-measuring"' in page
    fragment = reviewer_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and 'id="trigger-figures"' in fragment
    assert "of 1</strong> tasks of its intent refund_over_limit" in fragment
    # the fixture's appliesWhen says what happens, not "use it when": procmem's description adds it
    full = reviewer_client.get(url)
    assert full.status_code == 200 and "<html" in full.content.decode()


def test_the_trigger_warns_when_the_description_does_not_say_when(reviewer_client, agent):
    members = {"webapp-testing/SKILL.md": (ANTHROPIC / "webapp-testing" / "SKILL.md").read_text(encoding="utf-8")}
    reviewer_client.post(reverse("reviews:skills_import", args=[agent.name]), {"archive": archive(members)})
    version = ProcedureVersion.objects.get(procedure__key="webapp.testing")
    fragment = reviewer_client.get(reverse("reviews:version_trigger", args=[version.pk]), HTTP_HX_REQUEST="true")
    text = fragment.content.decode()
    assert 'id="trigger-when-warning"' in text and "nothing to measure it on" in text
