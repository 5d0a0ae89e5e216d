"""builtin/people on images a user or a spec can send: tiny images, 40 MP stills, extreme parameters; never a crash,
never a hang."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.fixtures.inference import REPO

# In one child process (importing inference takes ~15 s): OpenCV's HOG segfaults on some images smaller than its
# 64×128 window, which would end the bot (and this test run) rather than fail one call.
CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from inference.core.workflows.execution_engine.entities.base import ImageParentMetadata, WorkflowImageData
    from bot.backends.builtin_blocks import HogPeopleDetectorBlockV1, HogPeopleManifest
    params = {k: f.default for k, f in HogPeopleManifest.model_fields.items() if k not in ("type", "name", "images")}
    block = HogPeopleDetectorBlockV1()
    for h, w, overrides in json.loads(sys.argv[1]):
        print("running", h, w, overrides, flush=True)  # the last such line names the case that killed the child
        image = WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="t"),
                                  numpy_image=np.random.default_rng(1).integers(0, 255, (h, w, 3), dtype=np.uint8))
        start = time.perf_counter()
        found = block.run(images=image, **(params | overrides))["predictions"]
        print(json.dumps([len(found), time.perf_counter() - start]), flush=True)
""")
CASES = [
    (96, 128, {}), (64, 64, {}), (60, 300, {}), (1, 1, {}), (85, 43, {}),  # too small for anyone
    (576, 768, {"min_height": 1, "max_side": 10**6}),  # capped at 2048 px, not a 12x upscale
    (576, 768, {"max_side": 0, "scale_step": 0.5}),  # floors instead of a division or resize error
    (120, 160, {}), (3000, 4000, {}), (5472, 7296, {}),  # stills of 160 px, 12 MP, 40 MP: scanned within max_side
]


@pytest.mark.slow
def test_tiny_images_and_extreme_spec_parameters_give_no_crash_no_error_and_bounded_time():
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(CASES)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stdout[-300:]} {done.stderr[-300:]}"
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(results) == len(CASES)
    assert [found for found, _ in results[:5]] == [0] * 5
    assert all(seconds < 30 for _, seconds in results), results
