// The web page: pick a dashboard (?dashboard=NAME, else the first the server has), show
// its capture progress while Spark works, then the dashboard over a WebSocket session.
// `window.brushfire` exposes the live objects to browser tests and benchmarks.

import { Connection } from "./connection.js";
import { DashboardUI, el } from "./dashboard.js";

const app = document.getElementById("app");
window.brushfire = { ready: false, progress: [] };

async function getJSON(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

function showProgress(msg) {
  window.brushfire.progress.push({ stage: msg.stage, fraction: msg.fraction });
  const pct = msg.fraction === null || msg.fraction === undefined ? "" : ` ${Math.round(100 * msg.fraction)} %`;
  const box = el("div", "bf-progress");
  box.append(el("h2", "", "Capturing lineage on Spark…"), el("p", "", `${msg.stage}${pct}`));
  if (msg.fraction !== null && msg.fraction !== undefined) {
    const bar = document.createElement("progress");
    bar.max = 1;
    bar.value = msg.fraction;
    box.append(bar);
  }
  app.replaceChildren(box);
}

function showFailure(text) {
  const box = el("div", "bf-failed");
  box.append(el("h2", "", "The dashboard could not be opened"), el("pre", "", text));
  app.replaceChildren(box);
  window.brushfire.error = text;
}

async function main() {
  const params = new URLSearchParams(location.search);
  const list = await getJSON("api/dashboards");
  if (list.length === 0) throw new Error("the server has no dashboards");
  const name = params.get("dashboard") ?? list[0].name;
  let description = await getJSON(`api/dashboards/${encodeURIComponent(name)}`);
  if (description.status === "failed") return showFailure(description.error);

  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const url = `${scheme}://${location.host}${location.pathname.replace(/[^/]*$/, "")}ws/${encodeURIComponent(name)}`;
  let becameReady;
  const ready = new Promise((resolve) => { becameReady = resolve; });
  const connection = new Connection(url, {
    onStatus: (msg) => {
      if (msg.type === "progress") showProgress(msg);
      else if (msg.type === "failed") showFailure(msg.message);
      else becameReady();
    },
    onClose: (event) => {
      if (window.brushfire.ready) app.prepend(el("p", "bf-failed", `Disconnected from the server (${event.code}). Reload to reconnect.`));
    },
  });
  await connection.open();
  if (description.status !== "ready") {
    showProgress(description);
    await ready;
    description = await getJSON(`api/dashboards/${encodeURIComponent(name)}`);
  }
  document.title = `${description.title} · Brushfire`;
  const ui = new DashboardUI(app, description, (msg) => connection.request(msg));
  await ui.mount();
  Object.assign(window.brushfire, { ui, connection, description, ready: true });
}

main().catch((e) => showFailure(String(e?.stack ?? e)));
