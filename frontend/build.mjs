// Bundles the frontend with esbuild: everything comes from npm; nothing from a CDN.
//   dist/app.js     the page (index.html)
//   dist/widget.js  the Jupyter widget's front end (an ES module for anywidget)
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

const watch = process.argv.includes("--dev");
mkdirSync("dist", { recursive: true });
const common = { bundle: true, minify: !watch, sourcemap: true, target: "es2020", logLevel: "info" };
await build({ ...common, entryPoints: ["src/main.js"], outfile: "dist/app.js", format: "iife" });
await build({ ...common, entryPoints: ["src/widget.js"], outfile: "dist/widget.js", format: "esm" });
copyFileSync("index.html", "dist/index.html");
copyFileSync("src/style.css", "dist/style.css");
