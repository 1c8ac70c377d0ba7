// What the page and the Jupyter widget show instead of a dashboard: the capture's
// progress while Spark works, or why the dashboard could not be opened.

import { el } from "./dashboard.js";

export function progressBox(msg) {
  const known = msg.fraction !== null && msg.fraction !== undefined;
  const box = el("div", "bf-progress");
  box.append(el("h2", "", "Capturing lineage on Spark…"),
             el("p", "", `${msg.stage}${known ? ` ${Math.round(100 * msg.fraction)} %` : ""}`));
  if (known) {
    const bar = document.createElement("progress");
    bar.max = 1;
    bar.value = msg.fraction;
    box.append(bar);
  }
  return box;
}

export function failureBox(text) {
  const box = el("div", "bf-failed");
  box.append(el("h2", "", "The dashboard could not be opened"), el("pre", "", text));
  return box;
}
