// Bundles the frontend with esbuild: everything comes from npm; nothing from a CDN.
//   dist/app.js       the page (index.html)
//   dist/widget.js    the Jupyter widget's front end (an ES module for anywidget)
//   dist/favicon.ico  the page's icon (drawn here: three bars), and favicon.svg
import { build } from "esbuild";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";

const watch = process.argv.includes("--dev");
mkdirSync("dist", { recursive: true });
const common = { bundle: true, minify: !watch, sourcemap: true, target: "es2020", logLevel: "info" };
await build({ ...common, entryPoints: ["src/main.js"], outfile: "dist/app.js", format: "iife" });
await build({ ...common, entryPoints: ["src/widget.js"], outfile: "dist/widget.js", format: "esm" });
copyFileSync("index.html", "dist/index.html");
copyFileSync("src/style.css", "dist/style.css");
copyFileSync("favicon.svg", "dist/favicon.svg");
writeFileSync("dist/favicon.ico", icon(32));

// A 32-bit BMP icon of favicon.svg's three bars (grey, blue, orange), size x size.
function icon(size) {
  const bars = [[3, 17, "d5dbe3"], [13, 8, "4c78a8"], [23, 13, "f58518"]]; // x, top, colour (of 32)
  const pixels = Buffer.alloc(size * size * 4); // BGRA, bottom row first
  for (let row = 0; row < size; row++) {
    const y = size - 1 - row;
    for (let x = 0; x < size; x++) {
      const bar = bars.find(([bx, top]) => x >= bx * size / 32 && x < (bx + 6) * size / 32 &&
                                          y >= top * size / 32 && y < 29 * size / 32);
      if (!bar) continue;
      const c = bar[2];
      pixels.set([parseInt(c.slice(4, 6), 16), parseInt(c.slice(2, 4), 16), parseInt(c.slice(0, 2), 16), 255],
                 (row * size + x) * 4);
    }
  }
  const mask = Buffer.alloc(size * Math.ceil(size / 32) * 4); // AND mask: alpha decides
  const header = Buffer.alloc(40);
  header.writeUInt32LE(40, 0);
  header.writeInt32LE(size, 4);
  header.writeInt32LE(size * 2, 8); // XOR + AND bitmaps
  header.writeUInt16LE(1, 12);
  header.writeUInt16LE(32, 14);
  header.writeUInt32LE(pixels.length + mask.length, 20);
  const image = Buffer.concat([header, pixels, mask]);
  const dir = Buffer.alloc(22);
  dir.writeUInt16LE(1, 2); // type: icon
  dir.writeUInt16LE(1, 4); // one image
  dir.writeUInt8(size % 256, 6);
  dir.writeUInt8(size % 256, 7);
  dir.writeUInt16LE(1, 10);
  dir.writeUInt16LE(32, 12);
  dir.writeUInt32LE(image.length, 14);
  dir.writeUInt32LE(22, 18);
  return Buffer.concat([dir, image]);
}
