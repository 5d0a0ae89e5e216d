# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run chat test bench lint clean

# The install says what it is doing: a stage line per step (the first install downloads ~3 GB and takes minutes),
# and pip's own lines and progress bars under it.
#
# torch first, pinned with its torchvision, so the resolver never picks another pair. Why 2.14.1 from the
# registry (CUDA build, ~5.7 GB .venv) and not the CPU 2.13.0 wheel on this machine's disk (3.0 GB): inference
# needs torchvision, and the registry's torchvision wheels are CUDA builds; 0.28.0 on CPU torch 2.13.0 fails
# at import ("operator torchvision::nms does not exist"), which breaks transformers and sentence-transformers
# (our memory search). The CUDA build runs on CPU here and uses a GPU where a deployment has one.
# Its cost: importing it takes 487 MB of RSS against 193 MB for the CPU 2.13.0 wheel (measured on this machine),
# and inference imports torch whatever a pipeline runs; a CPU-only box with a matching CPU torchvision (pytorch.org's
# CPU index) holds its first camera ~300 MB lighter.
$(STAMP): pyproject.toml
	@echo "==> [1/4] Python environment in $(VENV) ($(PY))"
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@echo "==> [2/4] pip"
	@$(BIN)/pip install -q --upgrade "pip>=24"
	@echo "==> [3/4] torch and torchvision (the longest step: the CUDA build is several GB to download on a first install)"
	@$(BIN)/pip install torch==2.14.1 torchvision==0.29.1
	@echo "==> [4/4] vision-agent and its libraries (inference, anthropic, slack-bolt, mcp, ...)"
	@$(BIN)/pip install -e '.[dev]'
	@touch $(STAMP)
	@echo "==> Installed. The command is $(BIN)/vision-agent (or \`. $(BIN)/activate\` first); \`make chat\` opens the terminal chat."

run: $(STAMP)
	$(BIN)/vision-agent run

chat: $(STAMP)
	$(BIN)/vision-agent chat

NOPROXY := env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy HF_HUB_OFFLINE=1

test: $(STAMP)
	# Layering first (seconds): adapters -> core -> workspace, no cycles between bot/'s folders (.importlinter).
	$(BIN)/lint-imports
	$(BIN)/mypy
	# Every benchmark on small inputs, each in its own process: a change that breaks one fails here, not months later.
	$(NOPROXY) $(BIN)/python -m bench --quick
	# Four workers on two cores, a file per worker at a time (a file's fixtures stay together): much of the suite
	# waits on real time (cameras at 5 fps, servers booting), so two workers kept 1.6 cores busy; four keep both
	# (2,070 CPU-s in 1,070 s against 1,290-1,334 s with two, all passing). pytest's own exit code stands: 5 (no
	# tests collected) fails the build like any failure.
	$(NOPROXY) $(BIN)/python -m pytest -q -n 4 --dist loadfile

bench: $(STAMP)
	$(NOPROXY) $(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check bot handlers tools workspace tests bench

clean:
	rm -rf $(VENV)
