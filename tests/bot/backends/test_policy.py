"""The workflow block policy (bot/backends/policy): allowlist, operator extras, inner workflows, custom Python."""

from __future__ import annotations

import pytest

from bot.backends.environment import engine_flags
from bot.backends.policy import check_spec
from bot.backends.workflows import detection_workflow
from bot.config import InferenceConfig, load_settings
from tools.inference import vlm_workflow, zero_shot_workflow

DEFAULT = InferenceConfig()
WEBHOOK = "roboflow_core/webhook_sink@v1"


def with_step(step: dict, spec: dict | None = None) -> dict:
    spec = spec or detection_workflow("builtin/faces", track=False)
    spec["steps"].append(step)
    return spec


def secrets_step(name: str = "secrets") -> dict:
    return {"type": "roboflow_core/environment_secrets_store@v1", "name": name,
            "variables_storing_secrets": ["SLACK_BOT_TOKEN", "ANTHROPIC_API_KEY"]}


def webhook_step(name: str = "leak") -> dict:
    return {"type": WEBHOOK, "name": name, "url": "http://127.0.0.1:9/x", "json_payload": {"k": "$steps.secrets.x"}}


@pytest.mark.parametrize("spec", [
    detection_workflow("builtin/faces"),
    detection_workflow("builtin/people", line=[[0, 0], [10, 10]]),
    detection_workflow("workspace/project/3", track=False, annotate=False),
    zero_shot_workflow(["hard hat"], 0.3),
    vlm_workflow("florence2", "what is this?"),
    vlm_workflow("qwen2.5-vl", "what is this?"),
])
def test_the_specs_this_product_builds_itself_pass(spec):
    assert check_spec(spec, DEFAULT) == []


def test_secret_store_refusal_names_block_step_and_how_to_enable_in_one_line():
    problems = check_spec(with_step(secrets_step()), DEFAULT)
    assert len(problems) == 1
    line = problems[0]
    assert "\n" not in line and "'secrets'" in line and "roboflow_core/environment_secrets_store@v1" in line
    assert "inference.allowed_extra_blocks: [roboflow_core/environment_secrets_store@v1]" in line
    assert "config.yaml" in line


@pytest.mark.parametrize("block", [
    WEBHOOK, "roboflow_core/local_file_sink@v1", "roboflow_core/email_notification@v2",
    "roboflow_core/twilio_sms_notification@v1", "roboflow_core/slack_notification@v1",
    "roboflow_core/roboflow_dataset_upload@v2", "roboflow_core/model_monitoring_inference_aggregator@v1",
    "roboflow_core/openai_compatible@v1", "roboflow_core/onvif_sink@v1", "roboflow_core/cache_set@v1",
])
def test_sinks_and_outbound_blocks_are_refused(block):
    problems = check_spec(with_step({"type": block, "name": "out"}), DEFAULT)
    assert len(problems) == 1 and block in problems[0] and "refused" in problems[0]


def test_unknown_and_future_versions_are_refused_not_guessed():
    problems = check_spec(with_step({"type": "roboflow_core/line_counter@v9", "name": "next"}), DEFAULT)
    assert len(problems) == 1 and "not on this bot's allowlist" in problems[0] and "list_workflow_blocks" in problems[0]
    assert check_spec(with_step({"name": "typeless"}), DEFAULT)[0].startswith("step 'typeless' names no block")


def test_legacy_aliases_count_as_their_block():
    assert check_spec(with_step({"type": "RoboflowObjectDetectionModel", "name": "od"}), DEFAULT) == []
    refused = check_spec(with_step({"type": "RoboflowDatasetUpload", "name": "up"}), DEFAULT)
    assert len(refused) == 1 and "roboflow_core/roboflow_dataset_upload@v1" in refused[0]


def test_operator_extras_enable_a_block_and_its_alias():
    extra = InferenceConfig(allowed_extra_blocks=[f" {WEBHOOK} ", "roboflow_core/roboflow_dataset_upload@v1"])
    assert check_spec(with_step(webhook_step()), extra) == []
    assert check_spec(with_step({"type": "RoboflowDatasetUpload", "name": "up"}), extra) == []
    assert check_spec(with_step(secrets_step()), extra)  # only what was named


def test_extras_come_from_the_workspace_config_yaml(base_env, workspace_dir):
    (workspace_dir / "config.yaml").write_text(f"inference:\n  allowed_extra_blocks: [{WEBHOOK}]\n")
    settings = load_settings(base_env)
    assert settings.inference.allowed_extra_blocks == [WEBHOOK]
    assert check_spec(with_step(webhook_step()), settings.inference) == []


def inner(child: dict, **fields) -> dict:
    return {"type": "roboflow_core/inner_workflow@v1", "name": "nested", "parameter_bindings": {"image": "$inputs.image"},
            "workflow_definition": child, **fields}


def test_inner_workflow_children_get_the_same_check():
    child = with_step(webhook_step())
    problems = check_spec(with_step(inner(child)), DEFAULT)
    assert len(problems) == 1 and "'nested/leak'" in problems[0] and WEBHOOK in problems[0]
    assert check_spec(with_step(inner(detection_workflow("builtin/faces"))), DEFAULT) == []
    deep = detection_workflow("builtin/faces")
    for _ in range(5):
        deep = with_step(inner(deep))
    assert any("deeper than" in p for p in check_spec(deep, DEFAULT))


def test_inner_workflow_that_cannot_be_checked_is_refused():
    saved = {"type": "roboflow_core/inner_workflow@v1", "name": "saved", "parameter_bindings": {},
             "workflow_workspace_id": "local", "workflow_id": "anything"}
    remote = inner(detection_workflow("builtin/faces"), execution_mode="remote_dispatch",
                   remote_target="http://127.0.0.1:9")
    assert "put the child inline" in check_spec(with_step(saved), DEFAULT)[0]
    assert "another server" in check_spec(with_step(remote), DEFAULT)[0]
    operator = InferenceConfig(allowed_extra_blocks=["roboflow_core/inner_workflow@v1"])
    assert check_spec(with_step(saved), operator) == []
    assert check_spec(with_step(inner(with_step(webhook_step()))), operator)  # inline children still checked


def test_custom_python_refused_anywhere_including_inner_workflows():
    child = detection_workflow("builtin/faces", track=False)
    child["dynamic_blocks_definitions"] = [{"manifest": {"block_type": "Sneaky"}, "code": {"run_function_code": "x"}}]
    child["steps"].append({"type": "Sneaky", "name": "run_code"})
    outer = with_step(inner(child))
    problems = check_spec(outer, DEFAULT)
    assert len(problems) == 1 and "Sneaky" in problems[0] and "allow_custom_python: true" in problems[0]
    assert check_spec(outer, InferenceConfig(allow_custom_python=True)) == []
    assert check_spec(["not", "a", "spec"], InferenceConfig(allow_custom_python=True))
    shadow = with_step(webhook_step())
    shadow["dynamic_blocks_definitions"] = [{"manifest": {"block_type": WEBHOOK}}]
    assert any(WEBHOOK in p and "refused" in p for p in check_spec(shadow, InferenceConfig(allow_custom_python=True)))
    broken = {"steps": [], "dynamic_blocks_definitions": [{"manifest": "not a dict"}, 7]}
    assert "custom Python" in check_spec(broken, DEFAULT)[0]


def test_engine_flags_are_off_unless_the_operator_enabled_a_block_that_needs_them():
    assert not any(engine_flags(None).values()) and not any(engine_flags(DEFAULT).values())
    env_store = InferenceConfig(allowed_extra_blocks=["roboflow_core/environment_secrets_store@v1"])
    assert engine_flags(env_store)["ALLOW_WORKFLOW_BLOCKS_ACCESSING_ENVIRONMENTAL_VARIABLES"] is True
    assert engine_flags(env_store)["ALLOW_WORKFLOW_BLOCKS_ACCESSING_LOCAL_STORAGE"] is False
    files = InferenceConfig(allowed_extra_blocks=["roboflow_core/local_file_sink@v1"], allow_custom_python=True)
    assert engine_flags(files)["ALLOW_WORKFLOW_BLOCKS_ACCESSING_LOCAL_STORAGE"] is True
    assert engine_flags(files)["ALLOW_CUSTOM_PYTHON_EXECUTION_IN_WORKFLOWS"] is True
