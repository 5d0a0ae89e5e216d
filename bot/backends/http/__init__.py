"""The http backend: an inference server through inference-sdk, and `vision-agent inference-server`."""
