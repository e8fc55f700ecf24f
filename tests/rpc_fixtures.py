"""pytest fixtures over ``rpc_client`` that the RPC tests share (kept out of
rpc_client.py, which the benchmarks import without pytest).

``fx = server_fixture()`` in a test module gives it a live server
(``RpcFixture``) for each test, or with ``scope="module"`` one for all its
tests; ``c`` (imported) is a client of that module's ``fx``."""

import pytest

from rpc_client import RpcFixture


def server_fixture(scope="function", **config):
    """An ``fx`` fixture: ``RpcFixture(**config)``, closed at the end of its
    scope."""
    @pytest.fixture(scope=scope)
    def fx():
        f = RpcFixture(**config)
        yield f
        f.close()
    return fx


@pytest.fixture
def c(fx):
    """A client of the module's ``fx`` server, closed and let go of after
    the test (a module-scoped server does not gather them)."""
    client = fx.client()
    yield client
    client.close()
    fx.clients.remove(client)
