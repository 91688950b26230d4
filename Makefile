# Two commands for a learner: `make lab` and `make test`. Only python3 (3.10+) and make needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# JupyterLab refuses to start as root unless told; containers and CI often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_ARGS ?=
NOTEBOOKS = $(wildcard notebooks/*.ipynb solutions/*.ipynb)

.PHONY: help lab test lint notebooks clean
.DEFAULT_GOAL := help

## help: list the commands (`make lab` to learn, `make test` to check everything)
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

# The install step also turns off JupyterLab's news and update pop-ups, so lesson 00 opens clean
# and nothing is fetched from the network.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	mkdir -p $(VENV)/share/jupyter/lab/settings
	echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' \
		> $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $(STAMP)

## lab: create .venv if needed and open JupyterLab at lesson 00 (the repo is the root,
##      so exercises/ and solutions/ are one click away)
lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir=. \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb $(LAB_ARGS)

## lint: ruff on code and notebooks
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## test: the whole suite (lint, unit tests and doctests, nbval on stored notebook outputs)
test: lint
	$(BIN)/python -m pytest
ifneq ($(strip $(NOTEBOOKS)),)
	$(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/sanitize.cfg --nbval-cell-timeout=120 $(NOTEBOOKS)
endif

## notebooks: re-run every lesson and solution in a fresh kernel and store the outputs
##      (maintainers: tools/execute.py)
notebooks: $(STAMP)
	$(BIN)/python tools/execute.py notebooks solutions

clean:
	rm -rf $(VENV) *.egg-info

## progress: run your exercise notebooks (unchanged) and list each exercise's status
.PHONY: progress
progress: $(STAMP)
	@$(BIN)/attnlib check exercises/ || true  # not done yet is not a failure here

## exercises: regenerate exercises/ from solutions/ (exercises/ is never edited by hand;
##      maintainers: tools/generate.py)
.PHONY: exercises
exercises: $(STAMP)
	$(BIN)/python tools/generate.py

## test-browser: the lessons' widgets in JupyterLab, driven by Debian's Chromium with Playwright
##      (needs /usr/bin/chromium: `apt-get install chromium`; never a browser download)
BROWSER_STAMP := $(VENV)/.installed-browser
$(BROWSER_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test,browser]'
	touch $(BROWSER_STAMP)

.PHONY: test-browser
test-browser: $(BROWSER_STAMP)
	ATTNLIB_BROWSER=1 $(BIN)/python -m pytest tests/browser -v

## site: build the course website into build/site from the stored outputs (nothing is run,
##      no network); open build/site/index.html or `python -m http.server -d build/site`
SITE_STAMP := $(VENV)/.installed-site
$(SITE_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test,site]'
	touch $(SITE_STAMP)

.PHONY: site test-site
site: $(SITE_STAMP)
	$(BIN)/python tools/build_site.py

## test-site: build the site and open every page in Chromium (no request may leave localhost);
##      NET=offline runs it in a network namespace with only loopback (root: `unshare -n`)
NET ?=
OFFLINE = $(if $(filter offline,$(NET)),unshare -n sh -c 'ip link set lo up && exec "$$0" "$$@"',)
test-site: $(SITE_STAMP) $(BROWSER_STAMP)
	$(OFFLINE) env ATTNLIB_SITE=1 $(BIN)/python -m pytest tests/test_site.py -v

## test-widgets-ipywidgets7: the widget tests under ipywidgets 7.7.1, Colab's version, in a
##      side venv (build/venv-ipywidgets7); `make test` runs them under the current release
IPYW7 := build/venv-ipywidgets7
$(IPYW7)/.installed: pyproject.toml
	test -x $(IPYW7)/bin/python || $(PYTHON) -m venv $(IPYW7)
	$(IPYW7)/bin/python -m pip install --quiet 'ipywidgets==7.7.1' numpy sympy matplotlib pytest
	$(IPYW7)/bin/python -m pip install --quiet --no-deps -e .
	touch $@

.PHONY: test-widgets-ipywidgets7
test-widgets-ipywidgets7: $(IPYW7)/.installed
	ATTNLIB_IPYWIDGETS=7.7.1 $(IPYW7)/bin/python -m pytest -W ignore::DeprecationWarning \
		tests/test_widgets.py attnlib/widgets.py

## test-binder: repo2docker's dry run on this repository (side venv build/venv-repo2docker;
##      no Docker needed) and the checks that binder/ agrees with pyproject.toml
R2D := build/venv-repo2docker
$(R2D)/.installed:
	test -x $(R2D)/bin/python || $(PYTHON) -m venv $(R2D)
	$(R2D)/bin/python -m pip install --quiet jupyter-repo2docker
	touch $@

.PHONY: test-binder
test-binder: $(STAMP) $(R2D)/.installed
	ATTNLIB_REPO2DOCKER=$(R2D)/bin/repo2docker $(BIN)/python -m pytest tests/test_binder.py -v

## lite: build the course as a JupyterLite site in build/lite (JupyterLab and Python in the
##      browser: nothing to install); every file it fetches is checked against a pinned hash;
##      serve it with `python3 -m http.server -d build/lite` (LITE_ARGS=--cdn: see tools/build_lite.py)
LITE_ARGS ?=
.PHONY: lite test-lite
lite:
	$(PYTHON) tools/build_lite.py $(LITE_ARGS)

## test-lite: build the site, then open lesson 03 and its exercises in Chromium with only
##      loopback (as root: `unshare -n`; NET=online keeps the network, still failing on any
##      request that leaves 127.0.0.1)
LITE_OFFLINE = $(if $(filter online,$(NET)),,unshare -n sh -c 'ip link set lo up && exec "$$0" "$$@"')
test-lite: lite $(BROWSER_STAMP)
	$(LITE_OFFLINE) env ATTNLIB_LITE=1 $(BIN)/python -m pytest tests/test_lite.py -v
