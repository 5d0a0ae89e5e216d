"""Events to other programs: the signed webhook sender (sender), its HMAC signature (signing) and the frames kept
per alert for a webhook's `frame_url` (frames). Empty on purpose: `alerts` imports `frames`, `sender` imports
`alerts`; importing the package must not pull in the sender."""
