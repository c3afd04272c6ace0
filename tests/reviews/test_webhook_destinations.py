"""Webhooks reach public addresses only, unless the operator allows more (reviews/outbound.py): an
agent admin cannot make the server POST into its own network and read the answer in the delivery
log. Refused when the webhook is saved (address literals, `localhost` names) and again when a
delivery connects (the address actually reached), before a byte of the request is sent."""

from __future__ import annotations

import ipaddress

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from reviews.models import Webhook, WebhookDelivery
from reviews.outbound import address_kind, destination_problem
from reviews.webhooks import webhook_create, webhook_send_test
from tests.webhook_receiver import Receiver

LOCAL_ONLY_OFF = {"PROCMEM_WEBHOOK_ALLOW_LOCAL": False, "PROCMEM_WEBHOOK_ALLOWED_HOSTS": []}


@pytest.mark.parametrize(
    "url, kind",
    [
        ("http://127.0.0.1:6379/", "loopback"),
        ("http://[::1]/hook", "loopback"),
        ("http://[::ffff:127.0.0.1]/hook", "loopback"),
        ("http://localhost:8000/hook", "loopback"),
        ("http://metadata.localhost/", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.1.2.3/hook", "private"),
        ("https://192.168.0.10/hook", "private"),
        ("http://[fd00::1]/hook", "private"),
        ("http://0.0.0.0:5432/", "unspecified"),
        ("http://100.64.0.1/", "non-public"),
        ("http://[2002:7f00:1::]/", "loopback"),  # 6to4 carrying 127.0.0.1
        ("http://[2002:a9fe:a9fe::1]/", "link-local"),  # 6to4 carrying 169.254.169.254
        ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", "private"),  # Teredo, client 10.0.0.1
    ],
)
def test_local_addresses_are_refused_when_saved(url, kind, agent, agent_admin, db):
    with override_settings(**LOCAL_ONLY_OFF):
        with pytest.raises(ValidationError) as excinfo:
            webhook_create(agent=agent, user=agent_admin, name="x", url=url, events=["version.approved"])
    message = excinfo.value.message_dict["url"][0]
    assert f"a {kind} address" in message and "PROCMEM_WEBHOOK_ALLOW_LOCAL" in message
    assert not Webhook.objects.exists()


@pytest.mark.parametrize(
    "url", ["https://hooks.slack.com/services/T0/B0/x", "https://93.184.216.34/hook", "https://[2606:4700::1111]/"]
)
def test_public_destinations_are_accepted(url, agent, agent_admin, db):
    with override_settings(**LOCAL_ONLY_OFF):
        webhook, _ = webhook_create(agent=agent, user=agent_admin, name="x", url=url, events=["version.approved"])
    assert webhook.url == url


@pytest.mark.parametrize(
    "url, message",
    [
        ("http://[::1]:99999/", "port outside 1 to 65535"),
        ("https://hooks.example.com:0/", "port outside 1 to 65535"),
        ("https://user:secret@hooks.example.com/", "may not carry a user or password"),
        ("https://token@hooks.example.com/", "may not carry a user or password"),
    ],
)
def test_urls_a_delivery_cannot_use_are_refused_when_saved(url, message, agent, agent_admin, db):
    with pytest.raises(ValidationError) as excinfo:
        webhook_create(agent=agent, user=agent_admin, name="x", url=url, events=["version.approved"])
    assert message in excinfo.value.message_dict["url"][0]
    assert not Webhook.objects.exists()


def test_the_operator_allows_a_network_or_a_host(agent, agent_admin, db):
    with override_settings(
        PROCMEM_WEBHOOK_ALLOW_LOCAL=False, PROCMEM_WEBHOOK_ALLOWED_HOSTS=["10.20.0.0/16", "hooks.localhost"]
    ):
        webhook_create(
            agent=agent, user=agent_admin, name="a", url="http://10.20.3.4/hook", events=["version.approved"]
        )
        webhook_create(
            agent=agent, user=agent_admin, name="b", url="http://hooks.localhost/hook", events=["version.approved"]
        )
        with pytest.raises(ValidationError):
            webhook_create(
                agent=agent, user=agent_admin, name="c", url="http://10.21.0.1/hook", events=["version.approved"]
            )
    assert Webhook.objects.count() == 2


def test_the_page_says_why_and_stores_nothing(client, agent, agent_admin, db):
    client.force_login(agent_admin)
    form = {
        "name": "meta",
        "url": "http://169.254.169.254/latest/meta-data/",
        "events": ["version.approved"],
        "body_format": "json",
        "is_active": "on",
    }
    with override_settings(**LOCAL_ONLY_OFF):
        response = client.post(reverse("reviews:webhook_list", args=[agent.name]), form)
    assert response.status_code == 400
    assert "169.254.169.254 is a link-local address" in response.content.decode()
    assert not Webhook.objects.exists()


@override_settings(PROCMEM_WEBHOOK_BACKOFF_SECONDS=0, PROCMEM_WEBHOOK_MAX_ATTEMPTS=5)
def test_a_delivery_that_reaches_a_local_address_is_refused_before_sending(
    agent, agent_admin, db, django_capture_on_commit_callbacks
):
    """As when a public name later resolves to a local address: saved while local addresses were
    allowed, delivered after the operator turned that off."""
    with Receiver() as receiver:
        webhook, _ = webhook_create(
            agent=agent, user=agent_admin, name="rebound", url=receiver.url, events=["version.approved"]
        )
        with override_settings(**LOCAL_ONLY_OFF), django_capture_on_commit_callbacks(execute=True):
            webhook_send_test(webhook=webhook, user=agent_admin)
        assert receiver.received == []
    delivery = WebhookDelivery.objects.get()
    # refused once, not retried: the answer cannot change
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("failed", 1, None)
    assert delivery.error.startswith("refused: 127.0.0.1 connected to 127.0.0.1, a loopback address")


def test_https_is_refused_before_the_tls_handshake():
    """Not even a ClientHello reaches a local service."""
    import socket
    import threading
    import urllib.error
    import urllib.request

    from reviews.outbound import DestinationRefused, opener

    received: list[bytes] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(5)

        def accept():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(1)
                try:
                    received.append(conn.recv(1024))
                except OSError:
                    pass

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        request = urllib.request.Request(f"https://127.0.0.1:{server.getsockname()[1]}/hook", data=b"{}", method="POST")
        with override_settings(**LOCAL_ONLY_OFF), pytest.raises(urllib.error.URLError) as excinfo:
            opener().open(request, timeout=5)
        thread.join(5)
    assert isinstance(excinfo.value.reason, DestinationRefused)
    assert received in ([], [b""])  # connected, then closed without a byte


@override_settings(PROCMEM_WEBHOOK_BACKOFF_SECONDS=0)
def test_an_allowed_network_is_delivered_to(agent, agent_admin, db, django_capture_on_commit_callbacks):
    with (
        Receiver() as receiver,
        override_settings(PROCMEM_WEBHOOK_ALLOW_LOCAL=False, PROCMEM_WEBHOOK_ALLOWED_HOSTS=["127.0.0.0/8"]),
    ):
        webhook, _ = webhook_create(
            agent=agent, user=agent_admin, name="in-cluster", url=receiver.url, events=["version.approved"]
        )
        with django_capture_on_commit_callbacks(execute=True):
            webhook_send_test(webhook=webhook, user=agent_admin)
        assert len(receiver.received) == 1
    assert WebhookDelivery.objects.get().status == "succeeded"


@given(st.ip_addresses())
def test_an_address_literal_is_refused_exactly_when_it_is_not_public(address):
    host = f"[{address}]" if address.version == 6 else str(address)
    with override_settings(**LOCAL_ONLY_OFF):
        problem = destination_problem(f"http://{host}/hook")

    def is_public(a) -> bool:
        flagged = (a.is_loopback, a.is_link_local, a.is_unspecified, a.is_multicast, a.is_private, a.is_reserved)
        return a.is_global and not any(flagged)

    if address.version == 6 and address.ipv4_mapped:
        public = is_public(address.ipv4_mapped)
    else:
        carried = address.version == 6 and (address.sixtofour or (address.teredo and address.teredo[1]))
        public = is_public(address) and (not carried or is_public(carried))
    assert (problem is None) == public
    assert (address_kind(address) is None) == public


@given(st.text(max_size=200))
def test_any_text_gets_an_answer_not_an_exception(text):
    with override_settings(**LOCAL_ONLY_OFF):
        for url in (text, f"http://{text}/", f"https://{text}"):
            problem = destination_problem(url)
            assert problem is None or isinstance(problem, str)


def test_ipv6_scope_and_mapped_forms():
    assert address_kind(ipaddress.ip_address("::ffff:10.0.0.1")) == "private"
    assert address_kind(ipaddress.ip_address("fe80::1")) == "link-local"
    assert address_kind(ipaddress.ip_address("8.8.8.8")) is None
