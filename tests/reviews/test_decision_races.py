"""Decisions on one procedure are serialised: two people deciding at the same moment through a real
server process (gunicorn, several threads, its own database connections) never both win and never
get a server error. The loser gets 409, the database holds one ACTIVE version, and the audit trail
records exactly the winner's decision.

PostgreSQL only: the server process (tests/conftest.py `gunicorn_server`) shares the test database."""

from __future__ import annotations

import secrets
import threading

import pytest
import requests
from django.contrib.sessions.backends.db import SessionStore
from guardian.shortcuts import assign_perm

from library import services
from library.models import AuditEvent, ProcedureVersion, Source, Status
from tests.conftest import make_passing_eval
from tests.reviews.operations_helpers import make_user

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROUNDS = 20


@pytest.fixture
def server(gunicorn_server):
    return gunicorn_server


def _browser_for(user, base: str) -> requests.Session:
    """A signed-in HTTP session: a server-side session row and a CSRF cookie the header repeats."""
    store = SessionStore()
    store["_auth_user_id"] = str(user.pk)
    store["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    store["_auth_user_hash"] = user.get_session_auth_hash()
    store.create()
    csrf = secrets.token_hex(16)
    session = requests.Session()
    host = base.split("//", 1)[1].split(":", 1)[0]
    session.cookies.set("sessionid", store.session_key, domain=host)
    session.cookies.set("csrftoken", csrf, domain=host)
    session.headers.update({"X-CSRFToken": csrf, "Referer": base + "/"})
    return session


def _race(calls) -> list[int]:
    """Fires the calls at the same moment from their own threads; returns their status codes."""
    barrier = threading.Barrier(len(calls))
    codes: list[int | BaseException] = [0] * len(calls)

    def run(index, call):
        barrier.wait()
        try:
            codes[index] = call().status_code
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            codes[index] = exc

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(isinstance(code, int) for code in codes), codes
    return codes  # type: ignore[return-value]


def _propose(agent, intent, key: str, proposer, step: str) -> ProcedureVersion:
    return services.procedure_propose(
        agent=agent,
        intent=intent,
        key=key,
        applies_when="The customer asks for a refund above the agent's limit.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Check the return window with checkReturnWindow({{order_id}}).",
            step,
        ],
        required_tools=["lookupOrder", "checkReturnWindow", "replyTemplates"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=proposer,
    )


@pytest.fixture
def people(agent, reviewers_group):
    proposer = make_user("race_proposer", group=reviewers_group)
    first = make_user("race_approver_1", group=reviewers_group)
    second = make_user("race_approver_2", group=reviewers_group)
    admin_1 = make_user("race_admin_1", group=reviewers_group, is_staff=True, is_superuser=True)
    admin_2 = make_user("race_admin_2", group=reviewers_group, is_staff=True, is_superuser=True)
    for user in (first, second):
        assign_perm("library.approve_agent_procedures", user, agent)
    return proposer, first, second, admin_1, admin_2


def _versions(procedure) -> dict[int, str]:
    return dict(ProcedureVersion.objects.filter(procedure=procedure).values_list("number", "status"))


def _audit(procedure, since_id: int) -> list[tuple[str, int]]:
    return list(
        AuditEvent.objects.filter(procedure=procedure, pk__gt=since_id)
        .order_by("pk")
        .values_list("action", "version__number")
    )


def _last_audit_id() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def _one_winner(codes: list[int]) -> int:
    """The index of the single winner; the other got 409."""
    winners = [i for i, code in enumerate(codes) if code in (200, 302)]
    assert len(winners) == 1 and sorted(codes)[-1] == 409, codes
    return winners[0]


def test_two_approvers_of_two_candidates_one_wins(server, agent, intent, people):
    proposer, first, second, _admin_1, _admin_2 = people
    browsers = [_browser_for(first, server), _browser_for(second, server)]
    for round_ in range(ROUNDS):
        # given: v1 ACTIVE, and two candidates v2, v3 whose evals ran against that active set
        key = f"refund.race_approve_{round_}"
        v1 = _propose(agent, intent, key, proposer, "Reply with replyTemplates('v1').")
        make_passing_eval(v1)
        services.version_approve(version=v1, user=first, comment="base")
        candidates = [_propose(agent, intent, key, proposer, f"Reply with replyTemplates('v{n}').") for n in (2, 3)]
        for candidate in candidates:
            make_passing_eval(candidate)
        mark = _last_audit_id()
        # when: both approvers press "Approve" at once, each on a different candidate
        codes = _race(
            [
                lambda b=browser, c=candidate: b.post(
                    f"{server}/versions/{c.pk}/approve/", data={"comment": "go", "confirm": "on"}, allow_redirects=False
                )
                for browser, candidate in zip(browsers, candidates)
            ]
        )
        # then: one is ACTIVE, v1 retired once, the loser is still a candidate
        winner = candidates[_one_winner(codes)]
        loser = candidates[1 - _one_winner(codes)]
        assert _versions(v1.procedure) == {
            1: Status.RETIRED,
            winner.number: Status.ACTIVE,
            loser.number: Status.CANDIDATE,
        }
        assert _audit(v1.procedure, mark) == [
            (AuditEvent.Action.AUTO_RETIRE, 1),
            (AuditEvent.Action.APPROVE, winner.number),
        ]


def test_two_rollbacks_to_one_version_one_wins(server, agent, intent, people):
    proposer, first, _second, admin_1, admin_2 = people
    browsers = [_browser_for(admin_1, server), _browser_for(admin_2, server)]
    key = "refund.race_rollback"
    v1 = _propose(agent, intent, key, proposer, "Reply with replyTemplates('v1').")
    make_passing_eval(v1)
    services.version_approve(version=v1, user=first, comment="base")
    v2 = _propose(agent, intent, key, proposer, "Reply with replyTemplates('v2').")
    make_passing_eval(v2)
    services.version_approve(version=v2, user=first, comment="next")
    for round_ in range(ROUNDS):
        # given: one version ACTIVE, the other RETIRED; both admins roll back to the retired one
        target, current = (v1, v2) if round_ % 2 == 0 else (v2, v1)
        mark = _last_audit_id()
        codes = _race(
            [
                lambda b=browser: b.post(
                    f"{server}/ops/versions/{target.pk}/rollback/",
                    data={"reason": f"round {round_}"},
                    allow_redirects=False,
                )
                for browser in browsers
            ]
        )
        _one_winner(codes)
        assert _versions(v1.procedure) == {target.number: Status.ACTIVE, current.number: Status.RETIRED}
        assert _audit(v1.procedure, mark) == [
            (AuditEvent.Action.AUTO_RETIRE, current.number),
            (AuditEvent.Action.ROLLBACK, target.number),
        ]


def test_approve_against_retire_one_wins(server, agent, intent, people):
    proposer, first, _second, admin_1, _admin_2 = people
    approver_browser, admin_browser = _browser_for(first, server), _browser_for(admin_1, server)
    outcomes = {"approve": 0, "retire": 0}
    for round_ in range(ROUNDS):
        # given: v1 ACTIVE and a candidate v2 evaluated against it
        key = f"refund.race_retire_{round_}"
        v1 = _propose(agent, intent, key, proposer, "Reply with replyTemplates('v1').")
        make_passing_eval(v1)
        services.version_approve(version=v1, user=first, comment="base")
        v2 = _propose(agent, intent, key, proposer, "Reply with replyTemplates('v2').")
        make_passing_eval(v2)
        mark = _last_audit_id()
        # when: the approver approves v2 while an admin retires v1
        codes = _race(
            [
                lambda: approver_browser.post(
                    f"{server}/versions/{v2.pk}/approve/",
                    data={"comment": "go", "confirm": "on"},
                    allow_redirects=False,
                ),
                lambda: admin_browser.post(
                    f"{server}/ops/versions/{v1.pk}/retire/", data={"reason": f"round {round_}"}, allow_redirects=False
                ),
            ]
        )
        # then: either the approval replaced v1 (and the retire found nothing active to retire), or
        # v1 was retired (and the approval was refused: its eval's baseline is gone)
        if _one_winner(codes) == 0:
            outcomes["approve"] += 1
            assert _versions(v1.procedure) == {1: Status.RETIRED, 2: Status.ACTIVE}
            assert _audit(v1.procedure, mark) == [(AuditEvent.Action.AUTO_RETIRE, 1), (AuditEvent.Action.APPROVE, 2)]
        else:
            outcomes["retire"] += 1
            assert _versions(v1.procedure) == {1: Status.RETIRED, 2: Status.CANDIDATE}
            assert _audit(v1.procedure, mark) == [(AuditEvent.Action.RETIRE, 1)]
    assert sum(outcomes.values()) == ROUNDS


def test_reviewers_proposing_one_reported_group_at_once_make_one_candidate(server, agent, people):
    from tests.reviews.test_mining_pages import _reported_run

    proposer, first, second, admin_1, admin_2 = people
    run = _reported_run(agent)
    browsers = [_browser_for(user, server) for user in (proposer, first, second, admin_1)]
    answers: list = [None] * len(browsers)

    def propose(index, browser):
        answers[index] = browser.post(
            f"{server}/mining-runs/{run.pk}/propose/",
            data={"intent": "order_status", "reason": f"reviewer {index}"},
            allow_redirects=False,
        )
        return answers[index]

    codes = _race([lambda i=i, b=b: propose(i, b) for i, b in enumerate(browsers)])
    # every request is answered (a redirect: to the candidate for the winner, back to the run for
    # the others), and the group became exactly one candidate, recorded once in the run's report
    assert codes == [302] * len(browsers)
    [version] = ProcedureVersion.objects.filter(mining_run=run)
    winners = [a for a in answers if a.headers["Location"].endswith(f"/versions/{version.pk}/")]
    assert len(winners) == 1
    run.refresh_from_db()
    [entry] = [e for e in run.report if e["intent"] == "order_status"]
    assert entry["version"]["pk"] == version.pk
    assert AuditEvent.objects.filter(action=AuditEvent.Action.PROPOSE, version__mining_run=run).count() == 1
