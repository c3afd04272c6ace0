"""Where webhooks may send: public addresses only, unless the operator allows more.

A webhook's URL is chosen by an agent's admin, not by the operator, and its delivery log shows the
start of each answer. Without a limit an agent admin could make the server POST to its own
network — the database, Redis, a cloud metadata service (169.254.169.254) — and read the reply.
So a webhook reaches only globally routable addresses (`ipaddress`'s `is_global`, IPv4-mapped IPv6
unwrapped), except:

- every address when PROCMEM_WEBHOOK_ALLOW_LOCAL is on (the demo turns it on: its receivers are
  local);
- the hosts and networks in PROCMEM_WEBHOOK_ALLOWED_HOSTS (`hooks.internal`, `10.20.0.0/16`,
  `192.168.1.7`): an in-cluster receiver the operator vouches for.

Checked twice. When a webhook is saved, a URL whose host is an address literal or a `localhost`
name is refused with the reason (`destination_problem`). When a delivery connects, the address the
socket actually reached is checked before anything is sent, the TLS handshake included (`opener`), which also covers names
that resolve to a local address and names whose answer changes between the two (DNS rebinding).
A refused destination fails the delivery at once: retrying cannot change the answer. Deliveries
connect directly, never through a proxy from the environment (the proxy would be the peer).
"""

from __future__ import annotations

import http.client
import ipaddress
import urllib.request
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
ALLOW_SETTINGS = "PROCMEM_WEBHOOK_ALLOW_LOCAL=1 or PROCMEM_WEBHOOK_ALLOWED_HOSTS"


class DestinationRefused(OSError):
    """The peer of a delivery is not a public address (an OSError, as any failed connection)."""


def address_kind(address: IPAddress) -> str | None:
    """None for a public address, else what it is ("loopback", "private", ...). An IPv4-mapped
    IPv6 address is judged by its IPv4 one; a 6to4 (`2002::/16`) or Teredo address is refused when
    the IPv4 address it carries is not public (`2002:7f00:1::` reaches 127.0.0.1 where a 6to4 relay
    routes it), and otherwise judged as itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address_kind(address.ipv4_mapped)
        carried = address.sixtofour or (address.teredo[1] if address.teredo else None)
        if carried is not None and address_kind(carried) is not None:
            return address_kind(carried)
    for kind in ("loopback", "link-local", "unspecified", "multicast", "private", "reserved"):
        if getattr(address, f"is_{kind.replace('-', '_')}"):
            return kind
    return None if address.is_global else "non-public"


def _allowed_entries() -> tuple[set[str], list[ipaddress.IPv4Network | ipaddress.IPv6Network]]:
    names, networks = set(), []
    for entry in settings.PROCMEM_WEBHOOK_ALLOWED_HOSTS:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.lower().rstrip("."))
    return names, networks


def _allowed(host: str, address: IPAddress | None) -> bool:
    if settings.PROCMEM_WEBHOOK_ALLOW_LOCAL:
        return True
    names, networks = _allowed_entries()
    if host.lower().rstrip(".") in names:
        return True
    return address is not None and any(address in network for network in networks)


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def destination_problem(url: str) -> str | None:
    """Why a webhook may not send to `url` as far as the URL alone tells (an address literal or a
    `localhost` name), or None. Names are judged when a delivery connects; whether `url` is a URL at
    all is the URL validator's question (None here)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return None
    literal = _literal(host)
    name = host.lower().rstrip(".")
    if literal is not None:
        kind = address_kind(literal)
    elif name == "localhost" or name.endswith(".localhost"):
        kind = "loopback"
    else:
        return None
    if kind is None or _allowed(host, literal):
        return None
    return f"{host} is a {kind} address; webhooks reach public addresses only ({ALLOW_SETTINGS} allows more)."


def check_peer(host: str, peer: str) -> None:
    """Raises DestinationRefused when the connected address `peer` is not allowed for `host`."""
    address = ipaddress.ip_address(peer.split("%", 1)[0])
    kind = address_kind(address)
    if kind is not None and not _allowed(host, address):
        raise DestinationRefused(
            f"{host} connected to {address}, a {kind} address; webhooks reach public addresses only ({ALLOW_SETTINGS} allows more)"
        )


class _CheckedHTTPConnection(http.client.HTTPConnection):
    def connect(self):
        super().connect()
        check_peer(self.host, self.sock.getpeername()[0])


class _CheckedHTTPSConnection(http.client.HTTPSConnection, _CheckedHTTPConnection):
    """HTTPSConnection.connect opens TCP through the next class, _CheckedHTTPConnection, then shakes
    hands: the peer is checked before the first TLS byte."""


class _CheckedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_CheckedHTTPConnection, req)


class _CheckedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_CheckedHTTPSConnection, req, context=self._context)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # A redirect is the receiver's answer, not somewhere to send a signed body: it counts as a failure.
    def redirect_request(self, *args, **kwargs):
        return None


def opener() -> urllib.request.OpenerDirector:
    """The opener deliveries use: peer checked on connect, no redirects, no proxy."""
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({}), _CheckedHTTPHandler, _CheckedHTTPSHandler, _NoRedirect
    )
