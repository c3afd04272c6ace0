"""Read isolation by namespace (PROCMEM_NAMESPACE_READ_ISOLATION, settings.NAMESPACE_READ_ISOLATION):
an access matrix of six users over two agents in two namespaces, with the setting off (the
default: every signed-in member reads every agent) and on (a user reads only the namespaces they
hold a right in; superusers and global reviewers read everything).

Users: `nobody` (no rights at all), `rev_a` / `rev_b` (the review right on namespace A / B only),
`global_rev` (the `reviewers` group), `admin_a` (manage_agent on agent A, no role) and `root`
(a superuser). Every object page of a hidden agent is a 404; every list, count, search result,
export and notification leaves the hidden agent out (its name, its procedure's key and its
marker text appear nowhere in the response).
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library import services
from library.models import Agent, AuditEvent, EvalRun, Intent, MiningRun, Namespace, Source
from reviews.models import Notification, NotificationKind
from reviews.notifications import notification_send
from tests.reviews.conftest import HTMX, client_for

pytestmark = pytest.mark.django_db

TOOLS = ["lookupOrder", "replyTemplates"]
USERS = ("nobody", "rev_a", "rev_b", "global_rev", "admin_a", "root")
# which of the two agents each user reads with the setting on (off: every user reads both)
READS_ON = {
    "nobody": set(),
    "rev_a": {"a"},
    "rev_b": {"b"},
    "global_rev": {"a", "b"},
    "admin_a": {"a"},
    "root": {"a", "b"},
}
# who sees the operations pages (a right on the agent; both settings: operations never were open)
OPERATES = READS_ON


class World:
    def __init__(self, reviewers_group):
        User = get_user_model()
        self.namespaces = {s: Namespace.objects.create(name=f"team-{s}") for s in "ab"}
        self.agents, self.versions, self.runs, self.mining = {}, {}, {}, {}
        proposer = User.objects.create_user("proposer_x", password="pw")
        proposer.groups.add(reviewers_group)
        for side in "ab":
            agent = Agent.objects.create(
                name=f"agent_{side}lpha" if side == "a" else "agent_beta", tools=TOOLS, namespace=self.namespaces[side]
            )
            intent = Intent.objects.create(agent=agent, name=f"intent_{side}")
            version = services.procedure_propose(
                agent=agent,
                intent=intent,
                key=f"proc{side}.refund",
                applies_when=f"The customer asks about marker{side}zz.",
                steps=["Look up the order with lookupOrder({{order_id}}).", "Reply with replyTemplates('done')."],
                required_tools=TOOLS,
                forbidden_actions=[],
                source=Source.MANUAL,
                proposed_by=proposer,
            )
            self.agents[side], self.versions[side] = agent, version
            self.runs[side] = EvalRun.objects.create(
                version=version, content_hash=version.content_hash, state=EvalRun.State.RUNNING, cases_total=2
            )
            self.mining[side] = MiningRun.objects.create(
                agent=agent, started_by=proposer, parameters={"trigger": "manual"}
            )
        self.users = {
            name: User.objects.create_user(name, password="pw-" + name, email=f"{name}@example.com") for name in USERS
        }
        assign_perm("library.review_namespace_procedures", self.users["rev_a"], self.namespaces["a"])
        assign_perm("library.review_namespace_procedures", self.users["rev_b"], self.namespaces["b"])
        self.users["global_rev"].groups.add(reviewers_group)
        assign_perm("library.manage_agent", self.users["admin_a"], self.agents["a"])
        self.users["root"].is_superuser = True
        self.users["root"].save()

    def words(self, side: str) -> list[str]:
        """What gives an agent away in a response: its name, its procedure's key, its marker."""
        return [self.agents[side].name, f"proc{side}.refund", f"marker{side}zz"]

    def object_pages(self, side: str) -> dict[str, str]:
        """Pages of one object of the agent (read access: 200 when readable, 404 when hidden)."""
        v, agent = self.versions[side], self.agents[side].name
        return {
            "candidate": reverse("reviews:version", kwargs={"pk": v.pk}),
            "procedure": reverse("reviews:procedure", kwargs={"pk": v.procedure_id}),
            "eval panel": reverse("reviews:version_eval_panel", kwargs={"pk": v.pk}),
            "eval run": reverse("reviews:eval_detail", kwargs={"pk": self.runs[side].pk}),
            "mining runs": reverse("reviews:mining_runs", kwargs={"agent": agent}),
            "mining run": reverse("reviews:mining_run", kwargs={"pk": self.mining[side].pk}),
        }

    def ops_pages(self, side: str) -> dict[str, str]:
        """The agent's operations pages (the ops audience; 404 for everyone else)."""
        v, agent = self.versions[side], self.agents[side].name
        return {
            "ops agent": reverse("reviews:ops_agent", kwargs={"agent": agent}),
            "ops procedure": reverse("reviews:ops_procedure", kwargs={"agent": agent, "key": f"proc{side}.refund"}),
            "metrics": reverse("reviews:ops_metrics", kwargs={"agent": agent}),
            "version metrics": reverse("reviews:ops_version_metrics", kwargs={"pk": v.pk}),
            "metrics.json": reverse("reviews:ops_metrics_json", kwargs={"agent": agent}),
            "version metrics.json": reverse("reviews:ops_version_metrics_json", kwargs={"pk": v.pk}),
            "audit of the agent": reverse("reviews:ops_audit") + f"?agent={agent}",
        }


LIST_PAGES = {
    "queue": "/queue/",
    "search by marker": "/search/?q=markerazz+OR+markerbzz",
    "search a": "/search/?q=markerazz",
    "search b": "/search/?q=markerbzz",
    "search by key": "/search/?q=refund",
    "ops index": "/ops/",
    "namespaces": "/ops/namespaces/",
    "audit log": "/ops/audit/",
    "audit csv": "/ops/audit.csv",
    "notifications": "/notifications/",
    "refused at load": "/refused-at-load/",
}


@pytest.fixture
def world(reviewers_group):
    return World(reviewers_group)


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


@pytest.fixture(params=[False, True], ids=["isolation-off", "isolation-on"])
def isolation(request, settings):
    settings.NAMESPACE_READ_ISOLATION = request.param
    return request.param


def test_the_default_is_off():
    from django.conf import settings

    assert settings.NAMESPACE_READ_ISOLATION is False


@pytest.mark.parametrize("user", USERS)
def test_object_pages(world, isolation, user):
    client = client_for(world.users[user])
    for side in "ab":
        readable = side in READS_ON[user] if isolation else True
        for name, url in world.object_pages(side).items():
            status = client.get(url, **(HTMX if name == "eval panel" else {})).status_code
            if readable and name == "eval run":  # its page is for reviewers: 403 for the others
                assert status in (200, 403), (user, side, name, status)
                continue
            assert status == (200 if readable else 404), (user, side, name, status)
        stable = client.get(
            reverse("reviews:procedure_by_key", kwargs={"agent": world.agents[side].name, "key": f"proc{side}.refund"})
        )
        assert stable.status_code == (302 if readable else 404), (user, side)


@pytest.mark.parametrize("user", USERS)
def test_operations_pages(world, isolation, user):
    client = client_for(world.users[user])
    for side in "ab":
        for name, url in world.ops_pages(side).items():
            response = client.get(url)
            if name == "audit of the agent":
                # a list: the agent's events show only to its audience
                shown = world.agents[side].name in _body(response) and f"proc{side}.refund" in _body(response)
                if response.status_code == 200:
                    assert shown == (side in OPERATES[user]), (user, side, name)
                else:
                    assert response.status_code == 404 and not OPERATES[user], (user, side, name)
                continue
            assert response.status_code == (200 if side in OPERATES[user] else 404), (
                user,
                side,
                name,
                response.status_code,
            )


@pytest.mark.parametrize("user", USERS)
def test_lists_counts_search_and_exports_never_show_the_other_namespace(world, isolation, user):
    client = client_for(world.users[user])
    for name, url in LIST_PAGES.items():
        response = client.get(url)
        assert response.status_code in (200, 404), (user, name, response.status_code)
        body = _body(response) if response.status_code == 200 else ""
        for side in "ab":
            if not isolation or side in READS_ON[user]:
                continue
            for word in world.words(side):
                if word in url:  # the search box shows the query back
                    continue
                assert word not in body, (user, name, side, word)


@pytest.mark.parametrize("user", USERS)
def test_search_finds_what_the_user_reads(world, isolation, user):
    client = client_for(world.users[user])
    for side in "ab":
        body = _body(client.get(f"/search/?q=marker{side}zz"))
        readable = side in READS_ON[user] if isolation else True
        assert (f"proc{side}.refund" in body) == readable, (user, side)


def test_queue_counts_only_the_readable_namespace(world, settings):
    settings.NAMESPACE_READ_ISOLATION = True
    page = client_for(world.users["rev_a"]).get("/queue/")
    assert page.context["page"].count == 1
    assert [g.agent for g in page.context["groups"]] == [world.agents["a"].name]
    settings.NAMESPACE_READ_ISOLATION = False
    page = client_for(world.users["rev_a"]).get("/queue/")
    assert page.context["page"].count == 2


def test_namespaces_page_lists_only_namespaces_with_a_right(world, settings):
    settings.NAMESPACE_READ_ISOLATION = True
    body = _body(client_for(world.users["admin_a"]).get("/ops/namespaces/"))
    assert "team-a" in body and "team-b" not in body
    body = _body(client_for(world.users["global_rev"]).get("/ops/namespaces/"))
    assert "team-a" in body and "team-b" in body
    settings.NAMESPACE_READ_ISOLATION = False
    body = _body(client_for(world.users["admin_a"]).get("/ops/namespaces/"))
    assert "team-a" in body and "team-b" in body


def test_notifications_reach_only_readers_of_the_agent(world, isolation):
    users = [world.users[name] for name in USERS]
    rows = notification_send(
        users=users, kind=NotificationKind.EVAL_FINISHED, message="about markerazz", agent=world.agents["a"]
    )
    got = {row.user.username for row in Notification.objects.filter(pk__in=[r.pk for r in rows]).select_related("user")}
    assert got == ({u for u in USERS if "a" in READS_ON[u]} if isolation else set(USERS))
    for name in USERS:
        body = _body(client_for(world.users[name]).get("/notifications/"))
        assert ("markerazz" in body) == (name in got), name


def test_audit_csv_of_a_namespace_reviewer_holds_only_their_namespace(world, settings):
    settings.NAMESPACE_READ_ISOLATION = True
    body = _body(client_for(world.users["rev_b"]).get("/ops/audit.csv"))
    assert "procb.refund" in body and "proca.refund" not in body
    assert AuditEvent.objects.filter(agent=world.agents["a"]).exists()  # there was something to leak


def test_scope_form_offers_only_readable_namespaces(world, settings):
    settings.NAMESPACE_READ_ISOLATION = True
    manager = world.users["rev_a"]
    assign_perm("library.manage_namespace_procedures", manager, world.namespaces["a"])
    page = client_for(manager).get(reverse("reviews:procedure", kwargs={"pk": world.versions["a"].procedure_id}))
    choices = [ns.name for ns in page.context["scope_form"].fields["namespace"].queryset]
    assert choices == ["team-a"]
    moved = client_for(manager).post(
        reverse("reviews:procedure_scope", kwargs={"pk": world.versions["a"].procedure_id}),
        {"namespace": "team-b", "roles": "", "priority": 0, "confidence": "medium", "reason": "move"},
    )
    assert moved.status_code == 400
    world.versions["a"].procedure.refresh_from_db()
    assert world.versions["a"].procedure.namespace == world.namespaces["a"]


def test_every_agent_fast_path_holds_for_those_who_read_everything(world, settings):
    from library.permissions import agents_visible_to
    from reviews.access import every_agent

    settings.NAMESPACE_READ_ISOLATION = True
    assert every_agent(agents_visible_to(world.users["root"]))
    assert every_agent(agents_visible_to(world.users["global_rev"]))
    assert not every_agent(agents_visible_to(world.users["rev_a"]))
    assert list(agents_visible_to(world.users["nobody"])) == []
    settings.NAMESPACE_READ_ISOLATION = False
    assert every_agent(agents_visible_to(world.users["nobody"]))


def test_the_agent_tools_api_hides_an_agent_of_another_namespace(world, isolation):
    """The session-authenticated admin API (GET /api/v1|v2/agents/<agent>/tools) answers 404 for a
    hidden agent (403 for a readable one the user does not manage), v1 and v2 alike."""
    client = client_for(world.users["rev_b"])
    for prefix in ("v1", "v2"):
        response = client.get(f"/api/{prefix}/agents/{world.agents['a'].name}/tools")
        assert response.status_code == (404 if isolation else 403), (prefix, response.status_code)
        assert client.get(f"/api/{prefix}/agents/{world.agents['b'].name}/tools").status_code == 403
