// The web page: pick a dashboard (?dashboard=NAME, else the first the server has), show
// its capture progress while Spark works, then the dashboard over a WebSocket session,
// with the filters kept in the address (#filters=...). When the server picks up new data
// (`serve --watch`) it says `reloaded`: the page redraws from the new description, with
// the filters the session kept.
// `window.brushfire` exposes the live objects to browser tests and benchmarks.
// A server with an access token is opened at `/?token=...`: the server then keeps the
// token in a cookie, and the page sends it on its own requests too and takes it out of
// the address bar (so it is not bookmarked or shared by accident).

import { Connection, getJSON, rowsURL, withToken } from "./connection.js";
import { DashboardUI, el } from "./dashboard.js";
import { addressOf, stateInAddress } from "./selection.js";
import { failureBox, progressBox } from "./status.js";

const app = document.getElementById("app");
window.brushfire = { ready: false, progress: [] };

function showProgress(msg) {
  window.brushfire.progress.push({ stage: msg.stage, fraction: msg.fraction });
  app.replaceChildren(progressBox(msg));
}

function showFailure(text) {
  app.replaceChildren(failureBox(text));
  window.brushfire.error = text;
}

async function main() {
  const params = new URLSearchParams(location.search);
  const token = params.get("token");
  if (token !== null) {
    params.delete("token");
    const rest = params.toString();
    history.replaceState(null, "", `${location.pathname}${rest ? `?${rest}` : ""}${location.hash}`);
  }
  const api = (path) => getJSON(withToken(path, token));
  const list = await api("api/dashboards");
  if (list.length === 0) throw new Error("the server has no dashboards");
  const name = params.get("dashboard") ?? list[0].name;
  let description = await api(`api/dashboards/${encodeURIComponent(name)}`);
  if (description.status === "failed") return showFailure(description.error);

  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const url = `${scheme}://${location.host}${location.pathname.replace(/[^/]*$/, "")}ws/${encodeURIComponent(name)}`;
  let becameReady;
  const ready = new Promise((resolve) => { becameReady = resolve; });
  const connection = new Connection(withToken(url, token), {
    onStatus: (msg) => {
      if (msg.type === "progress") showProgress(msg);
      else if (msg.type === "failed") showFailure(msg.message);
      else becameReady();
    },
    onClose: (event) => {
      if (window.brushfire.ready) app.prepend(el("p", "bf-failed", `Disconnected from the server (${event.code}). Reload to reconnect.`));
    },
    onWorking: (msg) => window.brushfire.ui?.working(msg),
    onReloaded: (msg) => { reloads = reloads.then(() => redraw(msg)).catch((e) => showFailure(String(e?.stack ?? e))); },
  });
  let reloads = Promise.resolve(); // one redraw at a time, in order
  await connection.open();
  if (description.status !== "ready") {
    showProgress(description);
    await ready;
    description = await api(`api/dashboards/${encodeURIComponent(name)}`);
  }
  document.title = `${description.title} · Brushfire`;
  const saved = stateInAddress(location.hash);
  const exportURL = rowsURL(`api/dashboards/${encodeURIComponent(name)}/rows`, token);
  const linkOf = (state) => `${location.origin}${location.pathname}${location.search}${addressOf(state)}`;
  const show = async (desc) => {
    const ui = new DashboardUI(app, desc, (msg) => connection.request(msg),
      { onFilters: keepInAddress, exportURL, linkOf });
    window.brushfire.ui = ui; // (before mount: `working` messages may come while filters are restored)
    await ui.mount();
    return ui;
  };
  // new data: the new description (views' bars and extents may have grown), the session's
  // filters as the server carried them over, and a note of the rows now shown
  const redraw = async (msg) => {
    const desc = await api(`api/dashboards/${encodeURIComponent(name)}`);
    const ui = await show(desc);
    if (Object.keys(msg.filters ?? {}).length) await ui.setFilters(msg.filters);
    const dropped = msg.dropped?.length ? `; filters the new data refuse left off: ${msg.dropped.join(", ")}` : "";
    app.prepend(el("p", "bf-note", `New data: ${msg.rows.toLocaleString()} rows${dropped}.`));
    window.brushfire.reloads = (window.brushfire.reloads ?? 0) + 1;
    Object.assign(window.brushfire, { ui, description: desc });
  };
  const ui = await show(description);
  if (saved) await ui.setFilters(saved);
  Object.assign(window.brushfire, { ui, connection, description, ready: true });
}

// The selection state lives in the address (#filters=<tagged filters as JSON>), so a
// reload or a shared link shows the same selection, brushes drawn.
let addressTimer = null;
function keepInAddress(state) {
  clearTimeout(addressTimer); // at most one history entry rewrite per pause in a drag
  addressTimer = setTimeout(() => {
    history.replaceState(null, "", `${location.pathname}${location.search}${addressOf(state)}`);
  }, 250);
}

main().catch((e) => showFailure(String(e?.stack ?? e)));
