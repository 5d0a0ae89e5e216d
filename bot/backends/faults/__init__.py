"""Camera faults, noticed from a pipeline's own frames: video lost (nothing comes; reconnections with a bounded
backoff), a frozen, black/covered or grey (IR) picture, a picture that changed size. `picture.py` reads one frame
cheaply, `link.py` keeps the source's connection and its reconnection backoff, `watch.py` judges, `kinds.py` words."""
