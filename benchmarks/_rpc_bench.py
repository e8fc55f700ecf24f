"""Shared pieces of the RPC benchmarks: a live server on a free port (the
test suite's fixture) and percentiles."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

from rpc_client import Client, RpcFixture  # noqa: E402


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, int(round(p / 100 * (len(values) - 1)))))
    return values[k]


def us(seconds):
    return f"{seconds * 1e6:8.1f} us"


__all__ = ["Client", "RpcFixture", "percentile", "us"]
