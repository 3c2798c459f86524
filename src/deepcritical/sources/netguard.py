"""SSRF guard: refuse URLs that point at private, loopback or otherwise non-public hosts.

Web search results are untrusted input: a result (or a redirect from one) may point at
``http://127.0.0.1:8080/admin``, ``http://169.254.169.254/`` (cloud metadata), a router on
``192.168.1.1`` or an intranet name. Before the web source fetches any URL it calls
:func:`check_public_url_async`, which refuses:

* schemes other than ``http`` and ``https``;
* IP literals that are not globally routable: private, loopback, link-local, multicast,
  reserved, unspecified, shared (CGNAT ``100.64.0.0/10``), site-local, documentation ranges;
  IPv6 forms that embed an IPv4 address (IPv4-mapped ``::ffff:127.0.0.1``, NAT64
  ``64:ff9b::/96``, 6to4 ``2002::/16``) are judged by the embedded IPv4 address;
* the legacy ``inet_aton`` spellings the C resolver accepts: ``http://2130706433/``,
  ``http://0x7f.1/``, ``http://0177.0.0.1/``, ``http://127.1/``; a host whose last label is
  numeric but is not a valid address is refused as ambiguous;
* host names that are not valid DNS names: longer than 253 characters, or with an empty
  label or a label longer than 63 characters (RFC 1035; the resolver's IDNA encoding would
  raise :class:`UnicodeError` on them);
* ``localhost`` and names under ``.localhost``, ``.local``, ``.internal``, ``.localdomain``,
  ``.home.arpa``, ``.lan``, ``.intranet``, and single-label names (resolved through local
  search domains);
* names that resolve (``loop.getaddrinfo``) to any non-public address, that do not resolve,
  or that resolve to nothing.

URLs are parsed with :class:`httpx.URL`, the same parser the HTTP client uses, so
``http://a@127.0.0.1:80@evil.com/`` is judged by the host httpx would connect to.

Limitation: the name is resolved here and again by the HTTP client when it connects, so a
DNS server that answers differently the second time (DNS rebinding) is not caught. Fetches
are GET only, bodies are capped, and redirects are re-checked hop by hop by the caller.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import unquote

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""``await resolver(host, port)`` -> the IP address strings ``host`` resolves to.

Raises :class:`OSError` (e.g. :class:`socket.gaierror`) when the name does not resolve.
"""

ALLOWED_SCHEMES = frozenset({"http", "https"})
BLOCKED_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
BLOCKED_SUFFIXES = (
    ".localhost",
    ".local",
    ".internal",
    ".localdomain",
    ".home.arpa",
    ".lan",
    ".intranet",
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
MAX_HOST_CHARS = 253
"""The longest DNS name (RFC 1035, without the trailing dot)."""
MAX_LABEL_CHARS = 63
"""The longest label of a DNS name (RFC 1035)."""
_MAX_URL_IN_MESSAGE = 200


class UnsafeURLError(ValueError):
    """A URL the guard refuses to fetch.

    ``url`` is the URL as given; ``reason`` says why (e.g. ``"host 127.0.0.1 is not a public
    address (loopback)"``); ``str(err)`` combines both, with the URL cut to 200 characters.
    """

    def __init__(self, url: str, reason: str) -> None:
        shown = url if len(url) <= _MAX_URL_IN_MESSAGE else url[:_MAX_URL_IN_MESSAGE] + "…"
        super().__init__(f"refused {shown!r}: {reason}")
        self.url = url
        self.reason = reason


def _parse_inet_aton_part(part: str) -> int | None:
    """One dotted part as ``inet_aton`` reads it: ``0x`` hex, leading-``0`` octal, decimal."""
    if not part:
        return None
    try:
        if part[:2] in ("0x", "0X"):
            return int(part[2:], 16) if part[2:] else 0
        if len(part) > 1 and part[0] == "0":
            return int(part, 8)
        if part.isdigit():
            return int(part, 10)
    except ValueError:
        return None
    return None


def parse_inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address the C library's ``inet_aton`` would read from ``host``, or None.

    Accepts 1 to 4 dot-separated parts, each decimal, octal (leading ``0``) or hex (``0x``);
    the last part fills the remaining bytes: ``"2130706433"``, ``"0x7f.1"``, ``"127.1"``,
    ``"0177.0.0.01"`` all give ``127.0.0.1``. Returns None when ``host`` is not of that shape
    or a part is out of range.
    """
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = [_parse_inet_aton_part(p) for p in parts]
    if any(v is None for v in values):
        return None
    nums = [v for v in values if v is not None]
    *head, last = nums
    if any(v > 0xFF for v in head):
        return None
    if last >= 1 << (8 * (4 - len(head))):
        return None
    value = 0
    for v in head:
        value = (value << 8) | v
    value = (value << (8 * (4 - len(head)))) | last
    return ipaddress.IPv4Address(value)


def parse_ip_host(host: str) -> IPAddress | None:
    """``host`` (as in a URL, brackets removed) as an IP address, or None for a name.

    Understands IPv6 (zone id ``%eth0``/``%25eth0`` dropped), dotted-quad IPv4 and every
    ``inet_aton`` spelling (see :func:`parse_inet_aton`).
    """
    text = unquote(host).strip().strip("[]").rstrip(".")
    if "%" in text:
        text = text.split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    return parse_inet_aton(text)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    return None


def non_public_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public unicast address (``"loopback"``, ``"private"``...), or None.

    IPv6 addresses embedding IPv4 (mapped, NAT64, 6to4) are judged by the IPv4 address.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner = non_public_reason(embedded)
            return f"embeds {embedded}, {inner}" if inner else None
        if ip.is_site_local:
            return "site-local"
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
        ("not globally routable", not ip.is_global),
    )
    for label, hit in checks:
        if hit:
            return label
    return None


def _looks_numeric(label: str) -> bool:
    return label.isdigit() or (label[:2] in ("0x", "0X") and len(label) > 2)


def _static_check(url: str) -> tuple[str, int, IPAddress | None]:
    """Static checks; returns (lower-case ASCII host, port, IP if the host is an IP literal)."""
    try:
        parsed = httpx.URL(url)
        raw = parsed.raw_host.decode("ascii")
    except (httpx.InvalidURL, UnicodeError, TypeError) as exc:
        raise UnsafeURLError(url, f"unparsable URL ({exc})") from exc
    if parsed.scheme not in ALLOWED_SCHEMES:
        raise UnsafeURLError(url, f"scheme {parsed.scheme or '(none)'!r} is not http(s)")
    host = unquote(raw).strip().lower().rstrip(".")
    if not host:
        raise UnsafeURLError(url, "no host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    ip = parse_ip_host(host)
    if ip is not None:
        reason = non_public_reason(ip)
        if reason:
            raise UnsafeURLError(url, f"host {ip} is not a public address ({reason})")
        return host, port, ip
    labels = host.split(".")
    if len(host) > MAX_HOST_CHARS:
        raise UnsafeURLError(
            url, f"host name is too long ({len(host)} characters; at most {MAX_HOST_CHARS})"
        )
    if any(not 0 < len(label) <= MAX_LABEL_CHARS for label in labels):
        raise UnsafeURLError(
            url, f"host name has an empty label or one longer than {MAX_LABEL_CHARS} characters"
        )
    if _looks_numeric(labels[-1]):
        raise UnsafeURLError(url, f"host {host!r} is an ambiguous numeric address")
    if host in BLOCKED_NAMES or host.endswith(BLOCKED_SUFFIXES):
        raise UnsafeURLError(url, f"host {host!r} is a local name")
    if len(labels) < 2:
        raise UnsafeURLError(url, f"host {host!r} is a single-label (intranet) name")
    return host, port, None


def check_public_url(url: str) -> None:
    """Refuse ``url`` unless its scheme is http(s) and its host may be public; no DNS lookup.

    A host name that passes still has to be resolved: use :func:`check_public_url_async`
    before fetching. This synchronous check never blocks.

    Raises:
        UnsafeURLError: unparsable URL, non-http(s) scheme, no host, a non-public IP literal
            (any spelling), a host name that is not a valid DNS name (too long, an empty or
            over-long label), an ambiguous numeric host, ``localhost``, a local/internal name
            or a single-label name.
    """
    _static_check(url)


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve ``host`` with ``asyncio.get_running_loop().getaddrinfo`` (TCP); IP strings.

    Raises:
        OSError: the name does not resolve (:class:`socket.gaierror`).
    """
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return [str(info[4][0]) for info in infos]


async def check_public_url_async(url: str, *, resolver: Resolver | None = None) -> None:
    """:func:`check_public_url`, then resolve the host and refuse any non-public address.

    Every address the name resolves to must be public (an attacker's name answering both a
    public and a private address is refused).

    Args:
        url: the URL about to be fetched.
        resolver: name resolution; defaults to :func:`system_resolver`. Tests inject a fake.

    Raises:
        UnsafeURLError: the static checks fail, the name does not resolve (or resolves to
            nothing, or the resolver cannot encode it), or any address it resolves to is not
            public. Never :class:`UnicodeError`.
    """
    host, port, ip = _static_check(url)
    if ip is not None:
        return
    resolve = resolver or system_resolver
    try:
        addresses = list(await resolve(host, port))
    except (OSError, UnicodeError) as exc:  # UnicodeError: the resolver's IDNA encoding
        raise UnsafeURLError(url, f"host {host!r} does not resolve ({exc})") from exc
    if not addresses:
        raise UnsafeURLError(url, f"host {host!r} resolves to no address")
    for address in addresses:
        resolved = parse_ip_host(address)
        if resolved is None:
            raise UnsafeURLError(url, f"host {host!r} resolves to unparsable {address!r}")
        reason = non_public_reason(resolved)
        if reason:
            raise UnsafeURLError(url, f"host {host!r} resolves to {resolved} ({reason})")
