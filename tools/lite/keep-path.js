// Keep the notebook the learner is on in the page's address, so a reload reopens it.
//
// JupyterLite opens `lab/index.html?path=notebooks/03_scoring.ipynb`, then drops `?path=` from
// the address and does not restore its layout on a reload: the learner met an empty Launcher
// and thought the work was lost (it is kept in the browser's storage). This script follows
// the current tab (the app is exposed as window.jupyterapp by jupyter-lite.json's
// `exposeAppInBrowser`) and writes its file into `?path=` with history.replaceState; with no
// document open, `?path=` is removed. tools/build_lite.py adds it to lab/index.html.
(function () {
  "use strict";

  function keepPath(app) {
    function sync() {
      const widget = app.shell.currentWidget;
      const context = widget && widget.context;
      const url = new URL(window.location.href);
      if (context && context.path) {
        url.searchParams.set("path", context.path);
      } else if (!app.shell.widgets || !Array.from(app.shell.widgets("main")).some((w) => w.context)) {
        url.searchParams.delete("path");
      } else {
        return; // a launcher or a terminal in front of open notebooks: keep the last one
      }
      url.search = url.searchParams.toString().replace(/%2F/gi, "/"); // a readable address
      if (url.href !== window.location.href) {
        window.history.replaceState(window.history.state, "", url.href);
      }
    }
    // after the current task: JupyterLite drops `?path=` right after it opens the file
    const later = () => window.setTimeout(sync, 0);
    app.shell.currentChanged.connect(later);
    app.restored.then(later);
    window.addEventListener("popstate", later);
  }

  const started = Date.now();
  const wait = window.setInterval(function () {
    if (window.jupyterapp && window.jupyterapp.shell) {
      window.clearInterval(wait);
      keepPath(window.jupyterapp);
    } else if (Date.now() - started > 120000) {
      window.clearInterval(wait);
    }
  }, 100);
})();
