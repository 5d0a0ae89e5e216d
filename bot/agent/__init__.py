"""The agent: the loop, the prompt, Messages API blocks, sessions, compaction, and the tool contract."""
