"""The Claude client on the raw anthropic SDK: caching, retries, errors, usage and cost, token estimates."""
