// Print the font list matplotlib builds on its first import under Pyodide, as JSON.
//
//     node tools/lite/fontlist.js SITE/static/pyodide
//
// tools/build_lite.py runs this with the site's own Pyodide and package files (its lock), so
// the list is the one the browser kernel would build: the same matplotlib, the same fonts,
// the same paths. Pyodide's matplotlib 3.8.4 ships a fontlist.json written by a later
// matplotlib (format 390, where 3.8.4 reads 330), so without a fresh one every kernel rebuilds
// the list (about 6 s) and prints "Matplotlib is building the font cache" under a learner's
// first figure.
const path = require("path");

async function main() {
  const dir = path.resolve(process.argv[2]);
  const { loadPyodide } = require(path.join(dir, "pyodide.js"));
  const quiet = () => {};
  const pyodide = await loadPyodide({ indexURL: dir + path.sep, stdout: quiet, stderr: quiet });
  await pyodide.loadPackage("matplotlib", { messageCallback: quiet });
  const result = pyodide.runPython(`
import json
from pathlib import Path

import matplotlib
from matplotlib import font_manager

# importing font_manager built the list and wrote it where this matplotlib reads it
written = Path(font_manager.__file__).parent / "fontlist.json"
json.dumps({"version": font_manager.FontManager.__version__,
            "matplotlib": matplotlib.__version__,
            "fontlist": written.read_text()})
`);
  process.stdout.write(result);
}

main().catch((err) => {
  console.error(String(err));
  process.exit(1);
});
