"""A turn's answer in its thread: streamed or posted, the text as Slack takes it, frames, 👍/👎 and Stop."""
