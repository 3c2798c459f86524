"""SSRF guard: private/loopback/reserved hosts in every spelling are refused, public allowed."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence

import pytest

from deepcritical.sources.netguard import (
    UnsafeURLError,
    check_public_url,
    check_public_url_async,
    parse_inet_aton,
    parse_ip_host,
)

PUBLIC_IP = "93.184.215.14"


class FakeResolver:
    """Maps host names to address lists; unknown names fail like a real lookup."""

    def __init__(self, table: dict[str, Sequence[str]]) -> None:
        self.table = table
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append((host, port))
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.table[host]


REFUSED = [
    # schemes
    ("file:///etc/passwd", "scheme"),
    ("ftp://ftp.example.org/x", "scheme"),
    ("gopher://example.org:70/", "scheme"),
    ("javascript:alert(1)", ""),
    # IPv4 private, loopback, link-local, reserved, unspecified, shared, multicast
    ("http://127.0.0.1/", "loopback"),
    ("http://127.8.9.10:8080/admin", "loopback"),
    ("http://10.0.0.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://100.64.1.1/", "not globally routable"),
    ("http://224.0.0.1/", "multicast"),
    ("http://240.0.0.1/", ""),  # 240/4: "private" or "reserved" by Python version
    ("http://255.255.255.255/", ""),
    # IPv6
    ("http://[::1]/", "loopback"),
    ("http://[::]/", "unspecified"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fe80::1%25eth0]/", "link-local"),
    ("http://[fc00::1]/", "private"),
    ("http://[fd12:3456::1]/", "private"),
    ("http://[fec0::1]/", "site-local"),
    ("http://[ff02::1]/", "multicast"),
    ("http://[2001:db8::1]/", ""),
    # IPv6 embedding a private IPv4
    ("http://[::ffff:127.0.0.1]/", "embeds 127.0.0.1"),
    ("http://[::ffff:7f00:1]/", "embeds 127.0.0.1"),
    ("http://[::ffff:10.1.2.3]/", "embeds 10.1.2.3"),
    ("http://[64:ff9b::a9fe:a9fe]/", "embeds 169.254.169.254"),
    ("http://[2002:c0a8:101::1]/", "embeds 192.168.1.1"),
    ("http://[::127.0.0.1]/", "reserved"),
    # integer / octal / hex / short forms of 127.0.0.1 and friends
    ("http://2130706433/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://0x7f.1/", "loopback"),
    ("http://0177.0.0.1/", "unparsable"),  # httpx refuses to parse it; so do we
    ("http://0177.1/", "loopback"),
    ("http://017700000001/", "loopback"),
    ("http://127.1/", "loopback"),
    ("http://0/", "unspecified"),
    ("http://0xa9.0xfe.0xa9.0xfe/", "link-local"),
    ("http://3232235777/", "private"),
    ("http://1.2.3.999/", "unparsable"),
    ("http://1.2.3.4.5/", "ambiguous"),
    ("http://1.2.65536/", "ambiguous"),  # last part overflows its 2 bytes
    ("http://example.0x10/", "ambiguous"),
    # names
    ("http://localhost/", "local name"),
    ("http://LOCALHOST./", "local name"),
    ("http://api.localhost:3000/", "local name"),
    ("http://printer.local/", "local name"),
    ("http://metadata.google.internal/computeMetadata/v1/", "local name"),
    ("http://router.home.arpa/", "local name"),
    ("http://intranet/", "single-label"),
    # not valid DNS names (the resolver's IDNA encoding would raise UnicodeError)
    ("http://" + "a" * 300 + "/", "too long"),
    ("http://" + "a" * 296 + ".com/", "too long"),
    ("http://" + "a" * 64 + ".example.com/", "longer than 63"),
    ("http://a..example.com/", "empty label"),
    ("http://.example.com/", "empty label"),
    # userinfo tricks: judged by the host httpx connects to
    ("http://example.org@127.0.0.1/", "loopback"),
    # no host
    ("http:///path", ""),
]


@pytest.mark.parametrize(("url", "why"), REFUSED)
def test_static_refusals(url: str, why: str) -> None:
    with pytest.raises(UnsafeURLError) as info:
        check_public_url(url)
    assert why in info.value.reason
    assert info.value.url == url


@pytest.mark.parametrize(("url", "why"), REFUSED)
async def test_async_refuses_without_resolving(url: str, why: str) -> None:
    resolver = FakeResolver({})
    with pytest.raises(UnsafeURLError):
        await check_public_url_async(url, resolver=resolver)
    assert resolver.calls == []


@pytest.mark.parametrize(
    "url",
    [
        "https://pubmed.ncbi.nlm.nih.gov/12345/",
        "http://8.8.8.8/",
        "https://[2606:4700:4700::1111]/dns-query",
        "http://[::ffff:8.8.8.8]/",
        "https://1.1.1.1:8443/x",
    ],
)
def test_static_allows_public(url: str) -> None:
    check_public_url(url)


async def test_public_name_allowed_via_injected_resolver() -> None:
    resolver = FakeResolver(
        {"www.example.org": [PUBLIC_IP, "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]}
    )
    await check_public_url_async("https://www.example.org/page?q=1", resolver=resolver)
    assert resolver.calls == [("www.example.org", 443)]


async def test_name_resolving_to_private_is_refused() -> None:
    resolver = FakeResolver({"evil.example.com": ["10.0.0.1"]})
    with pytest.raises(UnsafeURLError, match=r"resolves to 10\.0\.0\.1 \(private\)"):
        await check_public_url_async("http://evil.example.com:8080/", resolver=resolver)
    assert resolver.calls == [("evil.example.com", 8080)]


@pytest.mark.parametrize(
    "addresses",
    [
        [PUBLIC_IP, "127.0.0.1"],  # one bad answer among good ones
        ["::1"],
        ["::ffff:192.168.0.10"],
        ["fe80::1%eth0"],
        [],
    ],
)
async def test_any_non_public_answer_refuses(addresses: list[str]) -> None:
    resolver = FakeResolver({"mixed.example.com": addresses})
    with pytest.raises(UnsafeURLError):
        await check_public_url_async("https://mixed.example.com/", resolver=resolver)


async def test_unresolvable_name_is_refused() -> None:
    with pytest.raises(UnsafeURLError, match="does not resolve"):
        await check_public_url_async("https://nx.example.com/", resolver=FakeResolver({}))


@pytest.mark.parametrize("host", ["a" * 300, "a" * 296 + ".com", "b." * 127 + "com"])
async def test_an_overlong_host_is_refused_by_the_guard_not_by_the_idna_codec(host: str) -> None:
    """Issue 13: a host of 300 characters raised UnicodeError (IDNA encoding in the system
    resolver) instead of the guard's UnsafeURLError; the system resolver is the default."""
    with pytest.raises(UnsafeURLError, match="too long"):
        await check_public_url_async(f"https://{host}/v1")


async def test_a_resolver_that_cannot_encode_the_name_is_a_refusal() -> None:
    async def idna_failure(host: str, port: int) -> Sequence[str]:
        raise UnicodeError("encoding with 'idna' codec failed")

    with pytest.raises(UnsafeURLError, match="does not resolve"):
        await check_public_url_async("https://odd.example.com/", resolver=idna_failure)


async def test_ip_literal_is_not_resolved() -> None:
    resolver = FakeResolver({})
    await check_public_url_async("http://8.8.8.8/", resolver=resolver)
    assert resolver.calls == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.01", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1.256", "10.1.1.0"),
        ("1.2.3.4", "1.2.3.4"),
        ("0x7f.0x100.1", None),  # a middle part > 255
        ("4294967296", None),  # > 32 bits
        ("1.2.3.4.5", None),
        ("example.com", None),
        ("08.1.1.1", None),  # 8 is not an octal digit
    ],
)
def test_parse_inet_aton(text: str, expected: str | None) -> None:
    got = parse_inet_aton(text)
    assert (str(got) if got else None) == expected


def test_parse_ip_host_forms() -> None:
    assert parse_ip_host("[::1]") == ipaddress.ip_address("::1")
    assert parse_ip_host("fe80::1%25eth0") == ipaddress.ip_address("fe80::1")
    assert parse_ip_host("127.0.0.1.") == ipaddress.ip_address("127.0.0.1")
    assert parse_ip_host("www.example.org") is None
