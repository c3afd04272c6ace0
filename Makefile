# The two commands: `make demo` (the app with demo data on embedded defaults) and `make test`
# (the whole suite). Both install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1

.PHONY: install demo test lint format browser typescript oidc-provider skills-ref clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch is installed first and pinned: the CPU wheel on these machines' disk. Without it
# sentence-transformers would pull a CUDA build of several GB.
$(STAMP): pyproject.toml clients/python/pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e './clients/python[embeddings,test,mcp,async,openai-agents,langgraph,fast]'
	$(PY) -m pip install --quiet -e '.[dev,adk]'
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the browser tests (never `playwright install`).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "browser tests need Debian's chromium: sudo apt-get install -y chromium"; fi; }

# The TypeScript client's dev tools (tsc, @types/node, the Vercel AI SDK for its adapter's test) at the
# versions in clients/typescript/package-lock.json; Debian's node and npm when missing and root.
TS_STAMP := clients/typescript/node_modules/.package-lock.json
$(TS_STAMP): clients/typescript/package.json clients/typescript/package-lock.json
	@if ! command -v npm >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; fi
	@if command -v npm >/dev/null 2>&1; then cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.package-lock.json; \
	  else echo "the TypeScript client's tests need node and npm: sudo apt-get install -y nodejs npm"; fi

typescript: $(TS_STAMP)

# npm packages the tests start with the machine's node: the OpenID Connect provider of the
# single sign-on tests (tests/oidc). Reinstalled when its lock file changes.
OIDC_STAMP := tests/oidc/node_modules/.installed
$(OIDC_STAMP): tests/oidc/package-lock.json
	npm ci --prefix tests/oidc --no-audit --no-fund --loglevel=error
	touch $(OIDC_STAMP)

oidc-provider: $(OIDC_STAMP)

# The Agent Skills reference validator (npm skills-ref) that the skills tests run with node on every
# skill procmem serves and `procmem skills sync` writes (tests/skills_ref).
SKILLS_REF_STAMP := tests/skills_ref/node_modules/.installed
$(SKILLS_REF_STAMP): tests/skills_ref/package-lock.json
	npm ci --prefix tests/skills_ref --no-audit --no-fund --loglevel=error
	touch $(SKILLS_REF_STAMP)

skills-ref: $(SKILLS_REF_STAMP)

demo: install
	$(PY) -m procmem_site.rundemo

test: install browser typescript oidc-provider skills-ref
	$(PY) -m pytest $(PYTEST_ARGS)

# The house style: `ruff format --check` and `ruff check` with the rules in pyproject.toml (.ci/run too).
lint: install
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) var/*.sqlite3 var/celery tests/oidc/node_modules tests/skills_ref/node_modules
