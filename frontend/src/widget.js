// The Jupyter widget's front end (an anywidget module; brushfire/widget.py is its Python
// side): the page's DashboardUI inside a notebook output.
//
// Engine in the kernel (the default): the description comes in the `_description` trait
// and every message travels as a custom comm message, answered by `protocol.handle` in
// the kernel; replies are matched by `id`. When Python sets `filters`, the kernel pushes
// a `state` (no `id`) that every view of the widget applies.
//
// Attached to a `brushfire serve` (`_url`): like the page, it reads the description over
// HTTP and opens its own WebSocket session; after each update it copies the session's
// filters (the tagged selection state) into the `filters` trait, and it applies the
// state Python puts there with one `filters` message; when the server serves new data
// (`serve --watch`: `reloaded`) it redraws from the new description. The
// server's access token (`_token`) goes with every request; the server must allow the
// notebook's origin (`brushfire serve --allow-origin`).

import { Connection, getJSON, rowsURL, withToken } from "./connection.js";
import { DashboardUI, el } from "./dashboard.js";
import { failureBox, progressBox } from "./status.js";

// Every rendered dashboard, for tests and for poking at from the browser console.
const rendered = (globalThis.brushfireWidgets ??= []);

async function render({ model, el: root }) {
  root.classList.add("bf-widget");
  let cleanup = () => {};
  try {
    cleanup = model.get("_url") ? await renderRemote(model, root) : await renderKernel(model, root);
  } catch (e) {
    root.replaceChildren(failureBox(String(e?.stack ?? e)));
  }
  return cleanup;
}

// send(message) -> Promise<reply> over the widget's comm. Ids carry a per-view prefix:
// every view of a widget receives every reply, and keeps only its own.
function kernelChannel(model, onOther) {
  const prefix = Math.random().toString(36).slice(2, 10);
  const waiting = new Map();
  let next = 1;
  model.on("msg:custom", (msg) => {
    const resolve = msg.type === "working" ? null : waiting.get(msg.id);
    if (resolve) {
      waiting.delete(msg.id);
      resolve(msg);
    } else {
      onOther(msg);
    }
  });
  return (message) => new Promise((resolve) => {
    const id = `${prefix}-${next++}`;
    waiting.set(id, resolve);
    model.send({ ...message, id });
  });
}

async function renderKernel(model, root) {
  let ui = null;
  let mounted = false;
  const send = kernelChannel(model, (msg) => {
    if (!mounted) return;
    if (msg.type === "state" && msg.id == null) ui.applyState(msg); // Python set `filters`
    else if (msg.type === "update") ui.applyUpdate(msg); // another view of this widget changed them
    else if (msg.type === "working") ui.working(msg); // a lazy answer is taking long
  });
  const mount = async () => {
    mounted = false;
    const before = ui;
    ui = new DashboardUI(root, model.get("_description"), send);
    const i = rendered.indexOf(before);
    if (before && i >= 0) rendered[i] = ui; // (redrawn for new data)
    await ui.mount();
    mounted = true;
    // The session may already have filters (set from Python, in another view, or carried
    // over to a newer capture: DashboardWidget.reload).
    const state = await send({ type: "state" });
    if (state.type === "state" && Object.keys(state.filters).length) await ui.applyState(state);
  };
  await mount();
  model.on("change:_description", () => { root.replaceChildren(); mount(); }); // new data
  return track(() => ui, () => {});
}

async function renderRemote(model, root) {
  const base = model.get("_url").replace(/\/+$/, "");
  const name = encodeURIComponent(model.get("_dashboard_name"));
  const token = model.get("_token");
  const describe = () => getJSON(withToken(`${base}/api/dashboards/${name}`, token));
  let description = await describe();
  if (description.status === "failed") {
    root.replaceChildren(failureBox(description.error));
    return () => {};
  }
  let ui = null;
  let becameReady;
  const ready = new Promise((resolve) => { becameReady = resolve; });
  const mirror = (filters) => {
    model.set("filters", filters);
    model.save_changes();
  };
  const exportURL = rowsURL(`${base}/api/dashboards/${name}/rows`, token);
  let shown = Promise.resolve(); // the first mount, then each redraw for new data, in order
  // new data (`serve --watch`): the new description, the filters the session kept
  const redraw = async (msg) => {
    const next = new DashboardUI(root, await describe(), (m) => connection.request(m), { onFilters: mirror, exportURL });
    await next.mount();
    const i = rendered.indexOf(ui);
    if (i >= 0) rendered[i] = next;
    ui = next;
    if (Object.keys(msg.filters ?? {}).length) await ui.setFilters(msg.filters);
    else mirror(ui.filters);
  };
  const connection = new Connection(withToken(`${base.replace(/^http/, "ws")}/ws/${name}`, token), {
    onStatus: (msg) => {
      if (msg.type === "progress") root.replaceChildren(progressBox(msg));
      else if (msg.type === "failed") root.replaceChildren(failureBox(msg.message));
      else becameReady();
    },
    onClose: (event) => {
      if (ui) root.prepend(el("p", "bf-failed", `Disconnected from ${base} (${event.code}).`));
    },
    onWorking: (msg) => ui?.working(msg),
    onReloaded: (msg) => {
      shown = shown.then(() => redraw(msg)).catch((e) => root.replaceChildren(failureBox(String(e?.stack ?? e))));
    },
  });
  await connection.open();
  if (description.status !== "ready") {
    root.replaceChildren(progressBox(description));
    await ready;
    description = await describe();
  }
  ui = new DashboardUI(root, description, (msg) => connection.request(msg), { onFilters: mirror, exportURL });
  const first = ui.mount();
  shown = first;
  await first;
  // Filters from Python: applied one change at a time; our own mirrored ones are no change.
  let applying = Promise.resolve();
  const apply = () => {
    applying = applying.then(async () => {
      const wanted = model.get("filters") ?? {};
      if (JSON.stringify(wanted) === JSON.stringify(ui.filters)) return;
      const reply = await ui.setFilters(wanted);
      if (reply.type !== "update") mirror(ui.filters); // refused: the trait shows the session's state
    });
  };
  model.on("change:filters", apply);
  if (Object.keys(model.get("filters") ?? {}).length) apply(); // set before the widget was shown
  else mirror(ui.filters);
  return track(() => ui, () => connection.close());
}

function track(current, close) {
  rendered.push(current());
  return () => {
    const i = rendered.indexOf(current()); // (redrawn for new data: the one shown now)
    if (i >= 0) rendered.splice(i, 1);
    close();
  };
}

export default { render };
