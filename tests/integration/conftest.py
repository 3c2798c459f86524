"""Fixtures of the integration tests: the local stub of the search APIs and an HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from deepcritical.sources.http import new_http_client
from deepcritical.testing.api_stub import StubAPI, StubData


@pytest.fixture(scope="session")
def stub_data(api_fixtures: Path) -> StubData:
    """The stub's records, built once per session from ``../shared/fixtures/api`` (or skip)."""
    return StubData(api_fixtures)


@pytest.fixture
def stub(stub_data: StubData) -> Iterator[StubAPI]:
    """A started :class:`StubAPI` on 127.0.0.1 (ephemeral port), stopped after the test.

    Skips when ``../shared/fixtures/api`` is absent. Fails the test if a handler thread raised
    an unexpected error (a bug in the stub, not a programmed fault).
    """
    with StubAPI(stub_data) as server:
        yield server
        errors = list(server.errors)
    assert not errors, f"the stub failed while answering: {errors}"


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """The run's shared HTTP client as the app builds it (5 s timeout)."""
    async with new_http_client(5.0) as http_client:
        yield http_client
