"""The tests run against a real Sluice server: packages/server/test/python-client.test.ts
starts one on loopback over its own test database and runs pytest with its address and
tokens in SLUICE_URL, SLUICE_API_TOKEN and SLUICE_ADMIN_TOKEN. They can also be pointed
at a running server by setting those by hand."""
from __future__ import annotations

import itertools
import json
import os
import urllib.request
from typing import Any, Dict, Iterator, Optional

import pytest

from sluice_client import SluiceClient


class Admin:
    """The admin calls the tests need (queue policies, cancel), which the client leaves out."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    def call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        headers = {"Authorization": "Bearer " + self.token}
        if body is not None:
            headers["Content-Type"] = "application/json"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read().decode())

    def put_queue(self, name: str, **policy: Any) -> None:
        self.call("PUT", "/api/queues/" + name, policy)

    def cancel(self, job_id: str) -> Any:
        return self.call("POST", "/api/jobs/%s/cancel" % job_id)

    def openapi(self) -> Any:
        return self.call("GET", "/openapi.json")


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.exit("set %s (packages/server/test/python-client.test.ts starts a server and sets it)" % name, returncode=2)
    return value


@pytest.fixture(scope="session")
def server_url() -> str:
    return _env("SLUICE_URL")


@pytest.fixture(scope="session")
def client(server_url: str) -> SluiceClient:
    return SluiceClient(server_url, _env("SLUICE_API_TOKEN"))


@pytest.fixture(scope="session")
def admin(server_url: str) -> Admin:
    return Admin(server_url, _env("SLUICE_ADMIN_TOKEN"))


_names = itertools.count(1)


@pytest.fixture
def queue(admin: Admin) -> Iterator[str]:
    """A fresh queue per test, retried once at most (maxAttempts 1), so a failure is final."""
    name = "py-%d-%d" % (os.getpid(), next(_names))
    admin.put_queue(name, maxAttempts=1)
    yield name
