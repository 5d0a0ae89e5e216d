# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade "pip>=24"
	# torch first, from this machine's disk; otherwise a resolver may pull another build.
	$(BIN)/pip install -q torch==2.14.1 torchvision==0.29.1
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/vision-agent run

test: $(STAMP)
	env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy \
		HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check bot handlers tools workspace tests bench

clean:
	rm -rf $(VENV)
