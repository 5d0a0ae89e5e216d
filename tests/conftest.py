"""Shared test set-up: no proxies, offline model hubs, fixtures from tests/fixtures/*."""

from __future__ import annotations

import os

for _var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
    os.environ.pop(_var, None)
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

pytest_plugins = [
    "tests.fixtures.common",
    "tests.fixtures.llm",
    "tests.fixtures.inference",
    "tests.fixtures.slack",
]
