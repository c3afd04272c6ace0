# The two commands: `make demo` (the app with demo data on embedded defaults) and `make test`
# (the whole suite). Both install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1

.PHONY: install demo test browser clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch is installed first and pinned: the CPU wheel on these machines' disk. Without it
# sentence-transformers would pull a CUDA build of several GB.
$(STAMP): pyproject.toml clients/python/pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e './clients/python[embeddings,test,mcp,async,openai-agents,langgraph]'
	$(PY) -m pip install --quiet -e '.[dev,adk]'
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the browser tests (never `playwright install`).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "browser tests need Debian's chromium: sudo apt-get install -y chromium"; fi; }

demo: install
	$(PY) -m procmem_site.rundemo

test: install browser
	$(PY) -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var/*.sqlite3 var/celery
