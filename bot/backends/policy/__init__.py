"""Which workflow specs may run: the block allowlist and the one check every backend entry point applies."""

from bot.backends.policy.check import ENABLE_CUSTOM_PYTHON_HINT, check_spec, deliberately_refused, enable_hint, refusal

__all__ = ["ENABLE_CUSTOM_PYTHON_HINT", "check_spec", "deliberately_refused", "enable_hint", "refusal"]
