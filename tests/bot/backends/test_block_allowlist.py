"""Every block inference loads is classified: on the allowlist or refused on purpose (an upgrade fails here first)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.backends.environment import ensure_inference_env
from bot.backends.policy.allowlist import ALIASES, ALLOWED, REFUSED

pytestmark = pytest.mark.slow  # imports inference (seconds)


@pytest.fixture(scope="module")
def loaded() -> list[Any]:
    """The block list the engine compiles against: inference's core blocks plus our plugin."""
    ensure_inference_env(None)
    from inference.core.workflows.execution_engine.introspection.blocks_loader import describe_available_blocks

    return list(describe_available_blocks(dynamic_blocks=[]).blocks)


def test_every_loaded_block_is_allowed_or_refused_deliberately(loaded):
    unclassified = sorted(
        b.manifest_type_identifier for b in loaded if b.manifest_type_identifier not in ALLOWED | REFUSED.keys()
    )
    assert not unclassified, (
        "inference loads blocks nobody classified; add each to ALLOWED or REFUSED in "
        f"bot/backends/policy/allowlist.py: {unclassified}"
    )
    assert not ALLOWED & REFUSED.keys()


def test_every_legacy_alias_maps_to_its_block(loaded):
    expected = {alias: b.manifest_type_identifier for b in loaded for alias in b.manifest_type_identifier_aliases}
    assert ALIASES == expected


def test_the_lists_name_only_blocks_that_exist(loaded):
    """A stale entry (a block inference dropped or renamed) would hide a typo in the allowlist."""
    known = {b.manifest_type_identifier for b in loaded}
    assert sorted((ALLOWED | REFUSED.keys()) - known) == []


def test_the_attack_blocks_are_refused_and_detectors_allowed(loaded):
    for block in ("environment_secrets_store@v1", "webhook_sink@v1", "local_file_sink@v1", "email_notification@v2",
                  "twilio_sms_notification@v2", "slack_notification@v1", "roboflow_dataset_upload@v2",
                  "model_monitoring_inference_aggregator@v1", "s3_sink@v1"):
        assert f"roboflow_core/{block}" in REFUSED
    plugin = {b.manifest_type_identifier for b in loaded if b.manifest_type_identifier.startswith("vision_agent/")}
    assert plugin and plugin <= ALLOWED
