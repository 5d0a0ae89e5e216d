"""Events to other programs: the signed webhook sender (sender) and its HMAC signature (signing). Empty on purpose:
importing the package must not pull in the sender. The frames a webhook's `frame_url` serves are the router's
(`bot.monitoring.alert_frames`)."""
