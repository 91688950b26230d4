# For a learner: `make lab`, `make progress`, `make update`; `make test` checks everything
# (maintainers). Only python3 (3.10+), git and make needed.
PYTHON ?= python3
# another Python in its own venv: `make test PYTHON=python3.13 VENV=build/venv-3.13` (a VENV
# given on the command line overrides the := below)
# (or `make test-pythons`, below)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# JupyterLab refuses to start as root unless told; containers and CI often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_ARGS ?=
# The course's own tracked notebooks: the tests never read a learner's my-work/.
NOTEBOOKS = $(wildcard notebooks/*.ipynb solutions/*.ipynb)
# uv (from the package index) installs the course about twice as fast as pip; pip stays the
# fallback: INSTALLER=pip forces it, and a failed uv step falls back to pip by itself.
INSTALLER ?= uv
# pytest over both cores (pytest-xdist): each file that runs the grader stays on one worker
# (xdist_group), the tests that plant a file in the package run alone afterwards (mark
# `alone`; tests/conftest.py); nbval keeps each notebook's cells, which share a kernel,
# on one worker
JOBS ?= auto
XDIST = -n $(JOBS) --dist loadgroup
XDIST_NBVAL = -n $(JOBS) --dist loadfile

.PHONY: help lab test lint notebooks clean
.DEFAULT_GOAL := help

## help: list the commands (`make lab` to learn, `make test` to check everything)
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

# The install step also turns off JupyterLab's news and update pop-ups, so lesson 00 opens clean
# and nothing is fetched from the network. uv compiles every module to bytecode as pip does: the
# grader's sandbox reads the packages read-only, so a kernel there could never cache its own and
# compiled IPython, numpy, sympy and matplotlib from source at every start (sympy and matplotlib:
# 4.7 s against 1.1 s here; where PYTHONDONTWRITEBYTECODE is set, every kernel did).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if [ "$(INSTALLER)" = uv ] && { test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet uv; } \
		&& $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[lab,test]'; then :; else \
		$(BIN)/python -m pip install --quiet --upgrade pip \
		&& $(BIN)/python -m pip install --quiet -e '.[lab,test]'; fi
	mkdir -p $(VENV)/share/jupyter/lab/settings
	echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' \
		> $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $(STAMP)

## lab: create .venv if needed, copy the exercises into my-work/ (yours: never overwritten,
##      git-ignored) and open JupyterLab at lesson 00 (the repo is the root, so my-work/,
##      exercises/ and solutions/ are one click away)
lab: $(STAMP)
	$(BIN)/python tools/workspace.py
	$(BIN)/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir=. \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb $(LAB_ARGS)

## test-pythons: `make test` on each Python the course claims that CI runs (PYTHONS, default
##      the lowest and highest, 3.10 and 3.13), each in its own venv build/venv-X.Y; finds
##      the first of pythonX.Y on PATH and ~/.pyenv/versions/X.Y.*/bin/python that runs
PYTHONS ?= 3.10 3.13
PYTHONS_TARGET ?= test
.PHONY: test-pythons test-pythons-fast test-fast
test-pythons:
	set -e; for v in $(PYTHONS); do \
	  py=; for c in $$(command -v python$$v) $$HOME/.pyenv/versions/$$v.*/bin/python; do \
	    if [ -z "$$py" ] && [ -x "$$c" ] && "$$c" -c "" 2>/dev/null; then py=$$c; fi; done; \
	  if [ -z "$$py" ]; then echo "test-pythons: no Python $$v (python$$v or pyenv)"; exit 1; fi; \
	  echo "== make $(PYTHONS_TARGET) on $$($$py --version)"; \
	  $(MAKE) --no-print-directory $(PYTHONS_TARGET) PYTHON=$$py VENV=build/venv-$$v; \
	done

## test-pythons-fast: `make test-fast` on each of PYTHONS, what a Python or numpy version can
##      change, quicker (2.5 min on 3.13 against 4 for make test, venv built; 4.3 to 4.9 min
##      for make test from a fresh clone on 3.10 to 3.13, the install included); test-fast:
##      lint, the unit tests and doctests without the grader's class runs
##      (tests/grader, test_check_cli, the exercise notebooks in fresh kernels), one sandboxed
##      `attnlib check` of every solution, and nbval of every lesson and solution
FAST_SKIP = --ignore=tests/grader --ignore=tests/test_check_cli.py \
	--ignore=tests/test_exercise_notebooks.py
test-pythons-fast:
	$(MAKE) --no-print-directory test-pythons PYTHONS_TARGET=test-fast

test-fast: lint
	$(BIN)/python -m pytest $(XDIST) -rfEs --durations=5 -m "not alone" $(FAST_SKIP)
	$(BIN)/python -m pytest -q -rfEs tests/test_check_cli.py -k every_solution_passes
ifneq ($(strip $(NOTEBOOKS)),)
	$(BIN)/python -m pytest $(XDIST_NBVAL) -rfEs --durations=5 --nbval --nbval-current-env \
		--nbval-sanitize-with tests/sanitize.cfg --nbval-cell-timeout=120 $(NOTEBOOKS)
endif

## lint: ruff on code and notebooks
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## test: the whole suite (lint, unit tests and doctests, nbval on stored notebook outputs),
##      over both cores (JOBS=0: in one process, faster when other jobs keep the cores busy);
##      prints the 15 slowest tests, each failure and error, and each skip's reason (-rfEs: one
##      line per reason, with its count). Your my-work/ is never read.
test: lint
	$(BIN)/python -m pytest $(XDIST) -rfEs --durations=15 -m "not alone"
	$(BIN)/python -m pytest -q -rfEs -m alone tests/grader/test_package_guard.py tests/test_selfcheck.py
ifneq ($(strip $(NOTEBOOKS)),)
	$(BIN)/python -m pytest $(XDIST_NBVAL) -rfEs --durations=15 --nbval --nbval-current-env \
		--nbval-sanitize-with tests/sanitize.cfg --nbval-cell-timeout=120 $(NOTEBOOKS)
endif

## notebooks: re-run every lesson and solution in a fresh kernel and store the outputs
##      (maintainers: tools/execute.py)
notebooks: $(STAMP)
	$(BIN)/python tools/execute.py notebooks solutions

clean:
	rm -rf $(VENV) *.egg-info

## progress: check your exercise notebooks (my-work/, else exercises/; never changed) and
##      say what passed, what to fix and the next exercise
.PHONY: progress
progress: $(STAMP)
	@$(BIN)/attnlib progress

## update: the latest course, never blocked by a lesson you ran: puts back the course's
##      notebooks (your edits and answers typed into exercises/ are first kept in my-work/),
##      pulls, keeps my-work/ as it is, adds new exercises to it and lists the exercises that
##      changed, each with the command that puts a fresh copy beside yours
.PHONY: update
update: $(STAMP)
	$(BIN)/python tools/workspace.py --update
	@$(MAKE) --no-print-directory $(STAMP)

## exercises: regenerate exercises/ from solutions/ (exercises/ is never edited by hand;
##      maintainers: tools/generate.py). A notebook with answers typed into it is left alone
##      and named; FORCE=1 overwrites it. my-work/ is never touched.
FORCE ?=
.PHONY: exercises
exercises: $(STAMP)
	$(BIN)/python tools/generate.py $(if $(FORCE),--force)

## test-browser: the lessons' widgets in JupyterLab, driven by Debian's Chromium with Playwright,
##      and a learner's route on a clone (lesson 03's link to my-work/, an answer saved,
##      make progress, a widget lesson run and saved, make update after an upstream change),
##      with each widget control's accessible name, each figure's alt and axe-core's audit of the
##      views (npm ci of tools/site/package-lock.json into build/axe, as test-site)
##      (needs /usr/bin/chromium: `apt-get install chromium`; never a browser download)
BROWSER_STAMP := $(VENV)/.installed-browser
$(BROWSER_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[lab,test,browser]'
	touch $(BROWSER_STAMP)

.PHONY: test-browser
test-browser: $(BROWSER_STAMP)  # and $(AXE), below where it is defined
	ATTNLIB_BROWSER=1 ATTNLIB_AXE=$(AXE) $(BIN)/python -m pytest tests/browser -v --durations=15

## site: build the course website into build/site from the stored outputs (nothing is run,
##      no network); open build/site/index.html or `python -m http.server -d build/site`
SITE_STAMP := $(VENV)/.installed-site
$(SITE_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[lab,test,site]'
	touch $(SITE_STAMP)

.PHONY: site test-site
site: $(SITE_STAMP)
	$(BIN)/python tools/build_site.py

## test-site: build the site and open every page in Chromium, over HTTP and from file://
##      (no request may leave localhost, no console error, no dead link), with axe-core's
##      accessibility audit of each page (npm ci of tools/site/package-lock.json into build/axe);
##      NET=offline runs it in a network namespace with only loopback (root: `unshare -n`)
NET ?=
OFFLINE = $(if $(filter offline,$(NET)),unshare -n sh -c 'ip link set lo up && exec "$$0" "$$@"',)
AXE := build/axe/node_modules/axe-core/axe.min.js
$(AXE): tools/site/package.json tools/site/package-lock.json
	mkdir -p build/axe
	cp tools/site/package.json tools/site/package-lock.json build/axe/
	cd build/axe && npm ci --no-audit --no-fund
	touch $@
test-browser: $(AXE)

test-site: $(SITE_STAMP) $(BROWSER_STAMP) $(AXE)
	$(OFFLINE) env ATTNLIB_SITE=1 ATTNLIB_AXE=$(AXE) $(BIN)/python -m pytest tests/test_site.py -v

## test-widgets-ipywidgets7: the widget tests under Colab's versions (ipywidgets 7.7.1,
##      IPython 7.34, ipykernel 6.17.1, jupyter_client 6.1.12: pyproject.toml's floors) in a
##      side venv (build/venv-ipywidgets7), and `attnlib check` on a solution there, sandboxed;
##      `make test` runs them under the current releases
IPYW7 := build/venv-ipywidgets7
COLAB_PINS := 'ipywidgets==7.7.1' 'ipython==7.34.0' 'ipykernel==6.17.1' 'jupyter_client==6.1.12'
$(IPYW7)/.installed: pyproject.toml
	test -x $(IPYW7)/bin/python || $(PYTHON) -m venv $(IPYW7)
	$(IPYW7)/bin/python -m pip install --quiet $(COLAB_PINS) numpy sympy matplotlib pytest
	$(IPYW7)/bin/python -m pip install --quiet --no-deps -e .
	touch $@

.PHONY: test-widgets-ipywidgets7
test-widgets-ipywidgets7: $(IPYW7)/.installed
	ATTNLIB_IPYWIDGETS=7.7.1 $(IPYW7)/bin/python -m pytest -W ignore::DeprecationWarning \
		tests/test_widgets.py attnlib/widgets.py
	# the check's own code under Colab's pins, in the sandbox (ipykernel 6 writes its
	# connection file again at every start: the sandbox must let it)
	$(IPYW7)/bin/attnlib check -q --require-sandbox solutions/03_scoring.ipynb

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

## test-routes: the README's conda and Notebook 7 commands, started as written: each serves
##      lesson 00 and an exercise from the course folder (needs Notebook 7, `.[browser]`)
.PHONY: test-routes
test-routes: $(BROWSER_STAMP)
	ATTNLIB_ROUTES=1 $(BIN)/python -m pytest tests/test_routes.py -v

## test-hub: a class on JupyterHub at 127.0.0.1: three users pull the course with nbgitpuller,
##      run lesson 03's check, and cannot read each other's files (side venv build/venv-hub;
##      configurable-http-proxy from npm into build/chp as tools/hub/package-lock.json pins it,
##      skipped with a reason without npm)
HUB := build/venv-hub
CHP := build/chp/node_modules/.bin/configurable-http-proxy
$(HUB)/.installed: pyproject.toml
	test -x $(HUB)/bin/python || $(PYTHON) -m venv $(HUB)
	$(HUB)/bin/python -m pip install --quiet 'jupyterhub==6.1.1' 'nbgitpuller==1.3.0' -e .
	touch $@

# the whole npm tree pinned by tools/hub/package-lock.json (configurable-http-proxy 5.2.0 and
# its dependencies, every one for node 20), installed as locked with `npm ci`
$(CHP): tools/hub/package.json tools/hub/package-lock.json
	mkdir -p build/chp
	cp tools/hub/package.json tools/hub/package-lock.json build/chp/
	-cd build/chp && npm ci --no-audit --no-fund && touch node_modules/.bin/configurable-http-proxy

.PHONY: test-hub
test-hub: $(STAMP) $(HUB)/.installed
	-@$(MAKE) --no-print-directory $(CHP)
	ATTNLIB_HUB=$(HUB) ATTNLIB_CHP=$(CHP) $(BIN)/python -m pytest tests/test_hub.py -v

## lite: build the course as a JupyterLite site in build/lite (JupyterLab and Python in the
##      browser: nothing to install); every file it fetches is checked against a pinned hash;
##      serve it with `python3 -m http.server -d build/lite` (LITE_ARGS=--cdn: see tools/build_lite.py)
LITE_ARGS ?=
.PHONY: lite test-lite
lite:
	$(PYTHON) tools/build_lite.py $(LITE_ARGS)

## test-lite: build the site, then in Chromium with only loopback: lesson 03 and its exercises
##      as a learner uses them, a reload, and every lesson run top to bottom, two pages at a
##      time (LITE_JOBS); LITE_ALL=1 runs every exercise notebook and solution too. As root:
##      `unshare -n`; NET=online keeps the network, still failing on any request that leaves
##      127.0.0.1
LITE_OFFLINE = $(if $(filter online,$(NET)),,unshare -n sh -c 'ip link set lo up && exec "$$0" "$$@"')
LITE_JOBS ?= 2
LITE_ALL ?=
test-lite: lite $(BROWSER_STAMP)
	$(LITE_OFFLINE) env ATTNLIB_LITE=1 $(if $(LITE_ALL),ATTNLIB_LITE_ALL=1) \
		$(BIN)/python -m pytest -n $(LITE_JOBS) --dist worksteal --durations=10 tests/test_lite.py -v
