"""The webrtc backend: pipelines streamed to an inference server over WebRTC (inference_sdk's client)."""
