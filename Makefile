# The two commands of the README: `make serve` and `make test`.
VENV ?= .venv

.PHONY: setup serve test lint bench

setup:
	bash scripts/setup.sh

serve: setup
	$(VENV)/bin/allnighter serve

# The browser tests run in a pytest session of their own: the real-model server of tests/ is
# gone by then, and the machine is left to Chromium and the show it watches.
test: setup
	bash scripts/test-packages.sh
	$(VENV)/bin/ruff check server models timesync tests playwright
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	node --test web/tests/
	$(VENV)/bin/pytest -v -rs --durations=15 tests
	$(VENV)/bin/pytest -v -rs --durations=10 playwright

bench: setup
	bash scripts/setup-pipecat.sh
	$(VENV)/bin/allnighter bench latency
	$(VENV)/bin/allnighter bench viewers
	$(VENV)/bin/allnighter bench lipsync --seconds 20
	$(VENV)/bin/allnighter bench clock
	$(VENV)/bin/allnighter bench abuse
	$(VENV)/bin/allnighter bench nights
