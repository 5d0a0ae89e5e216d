"""The direct backend: the in-process workflow engine and InferencePipeline threads."""
