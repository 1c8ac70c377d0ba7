// A whole dashboard: views, parameter widgets, the status line (selected rows, latency of
// the last interaction), the actions (clear all, scale to selection, the rows behind the
// selection, recording a trace), a line of help with the colours' legend, the details
// table and which capture is served. It talks to the engine only through
// `send(message) -> Promise<reply>` (docs/protocol.md), so the web page (a WebSocket) and
// the Jupyter widget (the kernel) share it.
//
// Layout: the spec's `layout` puts views in rows (side by side, sharing the row's width;
// stacked on a narrow window) under section titles; the views it leaves out, or all of
// them without one, sit in a grid whose columns follow the width of the page (as many as
// fit at about 440 px), cards packed downwards like masonry. Each view fills its card's
// width. The header, with the actions, stays at the top of the window as the page
// scrolls. Every filter the session reports is drawn on its view, wherever it came from.

import { Chart } from "./chart.js";
import { DetailsTable } from "./details.js";
import { formatNumber, formatShare, formatValue, roundForSpan } from "./format.js";
import { Recorder } from "./recorder.js";
import { ValuePicker } from "./picker.js";
import { COLUMN, columnFilters, parameterValue } from "./selection.js";

const fmt = new Intl.NumberFormat("en-US");

export class DashboardUI {
  // `send(message) -> Promise<reply>`; `onFilters(state)` after every change of the
  // filters; `exportURL(format, state, join)`: where the rows behind a selection download
  // from (the server's /api/dashboards/<name>/rows; with a join's name, that join's rows
  // behind it), or null (no "Download rows" control);
  // `linkOf(state)`: the page's address showing a selection state, or null (no "Copy
  // link").
  constructor(root, description, send, { onFilters = () => {}, exportURL = null, linkOf = null } = {}) {
    this.root = root;
    this.description = description;
    this.send = send;
    this.onFilters = onFilters;
    this.exportURL = exportURL;
    this.linkOf = linkOf;
    this.recorder = new Recorder(description.name);
    this.metrics = []; // per answered interaction: {type, view, total, roundTrip, render, engine}
    this.pending = new Map(); // view -> {message, t0}: the latest filter not yet sent
    this.inflight = []; // filter messages sent, oldest first, with their reply promises
    this.busy = false; // one filter message in flight at a time; newer ones wait in `pending`
    this.slow = false; // the oldest in flight has taken over a second: newer ones go at once
    this.work = null; // the last `working` message about it
    this.hoverSeq = 0;
    this.rowSeq = 0; // hovered details rows (forward lineage)
    this.highlightTargets = new Map(description.highlight.map((h) => [h.source, h.targets]));
    this.filters = description.filters ?? {};
    this.selected = null;
  }

  async mount() {
    const d = this.description;
    this.root.replaceChildren();
    this.root.classList.add("bf-dashboard");
    if (d.details) {
      const download = this.exportURL && ((format, join) => this.exportURL(format, this.filters, join));
      this.details = new DetailsTable(d.details, (msg) => this.request(msg), download,
        (rid) => this.hoverRow(rid), d.joins ?? [], (join, key) => this.hoverKey(join, key));
    }
    this.views = el("div", "bf-views");
    this.root.append(this.header(), this.helpBar(), this.parameterBar(), this.views);
    const cardOf = this.placeCards();
    this.charts = new Map();
    const cards = [];
    for (const v of d.views) {
      const card = cardOf.get(v.name);
      cards.push(card);
      this.charts.set(v.name, new Chart(v, {
        onFilter: (msg) => this.filter(msg),
        onHover: (view, bar) => this.hover(view, bar),
        onResize: (chart) => this.pack(chart.card),
        fileName: `${d.name}-${v.name}`,
      }));
    }
    // cards first (so each knows its width), then the views, all at once
    await Promise.all(d.views.map((v, i) => this.charts.get(v.name).mount(cards[i])));
    for (const card of cards) this.pack(card);
    this.watchSize();
    if (this.details) this.root.append(this.details.element);
    this.root.append(this.footer());
    const state = await this.request({ type: "state" });
    this.showStatus(state);
    this.showParameters(state.filters ?? {}); // parameter defaults: active from the start
    this.showColumnFilters(state.filters ?? {});
    if (state.filters) await this.showFilters(state.filters);
  }

  // A card per view, placed: in the spec's layout (sections of rows), then the rest in
  // the masonry grid (`this.grid`, if any view is left).
  placeCards() {
    const cards = new Map();
    const card = (name) => {
      const c = el("section", "bf-view");
      c.dataset.view = name;
      cards.set(name, c);
      return c;
    };
    for (const section of this.description.layout ?? []) {
      const box = el("section", "bf-section");
      if (section.title) box.append(el("h2", "bf-section-title", section.title));
      for (const names of section.rows) {
        const row = el("div", "bf-row");
        row.append(...names.map(card));
        box.append(row);
      }
      this.views.append(box);
    }
    const rest = this.description.views.filter((v) => !cards.has(v.name));
    this.grid = null;
    if (rest.length) {
      this.grid = el("div", "bf-grid");
      this.grid.append(...rest.map((v) => card(v.name)));
      this.views.append(this.grid);
    }
    return cards;
  }

  // Masonry: a card of the grid spans as many small grid rows as its height needs.
  pack(card) {
    if (card.parentElement !== this.grid) return;
    card.style.gridRowEnd = `span ${Math.ceil((card.offsetHeight + GAP) / ROW)}`;
  }

  // Views follow their cards' width (window resized, columns changed).
  watchSize() {
    if (typeof ResizeObserver === "undefined") return;
    let scheduled = false;
    this.resizer = new ResizeObserver(() => {
      if (scheduled) return;
      scheduled = true;
      requestAnimationFrame(async () => {
        scheduled = false;
        await Promise.all([...this.charts.values()].map((c) => c.resize()));
        for (const c of this.charts.values()) this.pack(c.card);
      });
    });
    this.resizer.observe(this.views);
  }

  // The title, the selected rows and the last interaction's latency; the actions.
  header() {
    const d = this.description;
    const h = el("header", "bf-header");
    const facts = el("div", "bf-facts");
    facts.append(el("h1", "", d.title), el("span", "bf-rows", `${fmt.format(d.rows)} rows`));
    this.statusLine = el("span", "bf-status", "");
    this.statusLine.setAttribute("role", "status");
    this.latencyLine = el("span", "bf-latency", "");
    facts.append(this.statusLine, this.latencyLine);
    const actions = el("div", "bf-actions");
    actions.setAttribute("role", "toolbar");
    actions.setAttribute("aria-label", "Dashboard actions");
    const clear = button("Clear all", () => this.clearAll());
    clear.dataset.action = "clear-all";
    clear.title = "Drop every filter: brushes, picks and parameters";
    actions.append(clear, this.fitAllControl(), ...(this.details?.controls ?? []));
    if (this.linkOf) actions.append(this.copyLinkButton());
    this.recordButton = button("● Record", () => this.toggleRecording());
    this.recordButton.dataset.action = "record";
    this.recordButton.title = "Record the session's interactions and download them as a trace (for the benchmark)";
    const help = button("?", () => this.showHelp(this.helpBox.hidden));
    help.dataset.action = "help";
    help.title = "How to use this dashboard";
    help.setAttribute("aria-label", "How to use this dashboard");
    this.helpButton = help;
    actions.append(this.recordButton, help);
    h.append(facts, actions);
    return h;
  }

  // "Copy link": the address of the page showing the current selection, to the
  // clipboard (or, where the browser keeps the clipboard from the page, shown to copy).
  copyLinkButton() {
    const b = button("Copy link", async () => {
      const link = this.linkOf(this.filters);
      let copied = false;
      try {
        await navigator.clipboard.writeText(link);
        copied = true;
      } catch {
        copied = copyByHand(link);
      }
      if (copied) {
        b.textContent = "Link copied ✓";
        setTimeout(() => { b.textContent = "Copy link"; }, 1500);
      } else {
        window.prompt("Copy this link to the selection:", link);
      }
    });
    b.dataset.action = "copy-link";
    b.title = "Copy a link to this page showing the current selection (it carries no access token)";
    return b;
  }

  // What to do with the views, said in a line (by the kinds of view and interaction the
  // dashboard has), and what the bars' colours mean. Hidden with its ×, until "?" (the
  // choice is kept in the browser).
  helpBar() {
    const d = this.description;
    const kinds = new Set(d.views.map((v) => v.brush));
    const tips = [];
    if (kinds.has("interval")) tips.push("Drag across a chart to brush it (drag the brush to move it, double-click clears it, Shift snaps it to whole bars)");
    if (kinds.has("rect")) tips.push("drag a box on a heatmap");
    if (kinds.has("points")) tips.push("click bars to pick them (Shift-click adds one)");
    if (kinds.has("interval") || kinds.has("rect") || kinds.has("points")) tips.push("a chart's × clears it, Clear all every filter");
    if (d.highlight.length) {
      tips.push(`hover the bars of ${d.highlight.map((x) => titleOf(d, x.source)).join(" or ")} to highlight their share`);
    }
    if (d.details) {
      const joins = (d.joins ?? []).map((j) => j.name);
      const or = joins.length > 1 ? `${joins.slice(0, -1).join(", ")} or ${joins.at(-1)}` : joins[0];
      tips.push("Show rows lists the rows behind the selection" + (joins.length
        ? `, or the ${or} rows they join (pick in its list; hover one to mark its rows' bars)` : ""));
    }
    tips.push("a chart's ⤢ scales it to the selection, ⤓ saves it as an image");
    tips.push("Tab and the arrow keys work too");
    const box = el("div", "bf-help");
    box.setAttribute("role", "note");
    const text = el("p", "bf-help-text", `${tips.join(" · ")}.`);
    const colors = d.colors ?? {};
    const legend = el("p", "bf-legend");
    legend.setAttribute("aria-label", "Colours");
    const swatch = (color, label) => {
      const item = el("span", "bf-legend-item", "");
      const chip = el("span", "bf-swatch");
      chip.style.background = color;
      item.append(chip, label);
      legend.append(item);
    };
    if (colors.full) swatch(colors.full, "all rows");
    if (colors.value) swatch(colors.value, "selected: passing the other charts' filters");
    if (colors.muted && kinds.has("points")) swatch(colors.muted, "not picked");
    if (colors.highlight && (d.highlight.length || d.details)) swatch(colors.highlight, "highlighted (hovered bar or row)");
    const close = el("button", "bf-help-close", "×");
    close.title = "Hide the help (? shows it again)";
    close.setAttribute("aria-label", "Hide the help");
    close.onclick = () => this.showHelp(false);
    box.append(text, legend, close);
    this.helpBox = box;
    box.hidden = readSetting("help") === "hidden";
    return box;
  }

  showHelp(show) {
    this.helpBox.hidden = !show;
    this.helpButton?.setAttribute("aria-expanded", String(show));
    writeSetting("help", show ? "shown" : "hidden");
  }

  // Which capture is served, at the page's foot.
  footer() {
    const f = el("footer", "bf-footer");
    if (this.description.version) f.append(versionNote(this.description.version));
    return f;
  }

  // "Scale to selection": every view's measure fits the selected rows (each view's ⤢
  // does it for that view alone).
  fitAllControl() {
    const label = el("label", "bf-fit-all", "");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.dataset.action = "fit-all";
    box.onchange = () => Promise.all([...this.charts.values()].map((c) => c.setFit(box.checked)));
    label.title = "Scale every view's measure to the selected rows (small selections stay visible); "
      + "the bars of all rows are then cut off at the top";
    label.append(box, " Scale to selection");
    this.fitAll = box;
    return label;
  }

  parameterBar() {
    const bar = el("div", "bf-parameters");
    this.parameterBarElement = bar;
    this.columnChips = [];
    this.parameterInputs = new Map();
    for (const p of this.description.parameters) {
      const searchable = p.widget === "dropdown" && (p.multiple || p.values.length > PLAIN_DROPDOWN);
      const label = el(searchable ? "div" : "label", "bf-parameter", ""); // (a label would forward clicks)
      label.append(el("span", "bf-parameter-name", p.name));
      let input;
      if (searchable) {
        input = new ValuePicker(p, (value) => this.filter({ type: "parameter", name: p.name, value }));
        input.show(p.default ?? null);
        label.append(input.element);
      } else if (p.widget === "dropdown") {
        input = document.createElement("select");
        input.append(new Option("(all)", ""));
        for (const v of p.values) input.append(new Option(String(v), String(v)));
        input.value = p.default ?? "";
        input.onchange = () => {
          const value = input.value === "" ? null : p.values.find((v) => String(v) === input.value);
          this.filter({ type: "parameter", name: p.name, value });
        };
        label.append(input);
      } else if (p.op === "between") {
        input = this.rangeSlider(p, label);
      } else {
        input = this.slider(p, label);
      }
      if (!(input instanceof ValuePicker)) input.name = p.name;
      bar.append(label);
      this.parameterInputs.set(p.name, input);
    }
    return bar;
  }

  // Filters on a column of the source (`column:<name>` in the state: from a shared link,
  // the widget's Python or a trace; no view draws them): each said beside the parameters,
  // with its × to clear it, so that a view's missing rows have a visible cause.
  showColumnFilters(filters) {
    for (const chip of this.columnChips) chip.remove();
    this.columnChips = columnFilters(filters).map(([column, f]) => {
      const chip = el("span", "bf-parameter bf-column-filter", "");
      chip.dataset.column = column;
      const what = f.interval ? f.interval.map((b) => (b === null ? "…" : formatValue(b))).join(" – ")
        : f.values.map(formatValue).join(", ");
      const readout = el("output", "bf-readout", f.interval ? what : `in ${what}`);
      chip.title = `A filter on the column ${column}: every view shows only its rows`;
      const reset = el("button", "bf-reset", "×");
      reset.title = `Clear the filter on ${column}`;
      reset.setAttribute("aria-label", `Clear the filter on ${column}`);
      reset.onclick = () => this.filter({ type: "clear", view: `${COLUMN}${column}` });
      chip.append(el("span", "bf-parameter-name", column), readout, reset);
      this.parameterBarElement.append(chip);
      return chip;
    });
  }

  // A slider: its value beside it (or "all" while inactive, its thumb then at the end
  // that lets every row pass) and a reset button.
  slider(p, label) {
    const input = document.createElement("input");
    input.type = "range";
    const [lo, hi] = p.range ?? [0, 0];
    Object.assign(input, { min: lo, max: hi, step: "any" });
    const symbol = { lt: "<", lte: "≤", gt: ">", gte: "≥" }[p.op] ?? p.op;
    const readout = el("output", "bf-readout", "");
    const reset = el("button", "bf-reset", "×");
    reset.title = `Reset ${p.name}`;
    reset.setAttribute("aria-label", `Reset ${p.name}`);
    input.show = (value) => {
      const active = value !== null && value !== undefined;
      input.value = String(active ? value : (p.op === "gt" || p.op === "gte" ? lo : hi));
      input.classList.toggle("bf-inactive", !active);
      readout.textContent = active ? `${symbol} ${formatNumber(+value)}` : "all";
      input.setAttribute("aria-valuetext", active ? `${p.name} ${symbol} ${formatNumber(+value)}` : `${p.name}: all`);
      reset.hidden = !active;
    };
    input.oninput = () => {
      const value = roundForSpan(+input.value, hi - lo);
      input.show(value);
      this.filter({ type: "parameter", name: p.name, value });
    };
    reset.onclick = () => {
      input.show(null);
      this.filter({ type: "parameter", name: p.name, value: null });
    };
    input.show(p.default);
    label.append(input, readout, reset);
    return input;
  }

  // A `between` slider: two thumbs (lo and hi, each a range input), the range beside
  // them (or "all" while inactive, the thumbs then at the ends) and a reset button.
  rangeSlider(p, label) {
    const [lo, hi] = p.range ?? [0, 0];
    const ends = [0, 1].map((i) => {
      const end = document.createElement("input");
      end.type = "range";
      Object.assign(end, { min: lo, max: hi, step: "any" });
      end.setAttribute("aria-label", `${p.name}, ${i ? "upper" : "lower"} bound`);
      end.classList.add("bf-range-end");
      return end;
    });
    const readout = el("output", "bf-readout", "");
    const reset = el("button", "bf-reset", "×");
    reset.title = `Reset ${p.name}`;
    reset.setAttribute("aria-label", `Reset ${p.name}`);
    const input = { name: p.name, ends }; // what showParameters drives
    input.show = (value) => {
      const active = Array.isArray(value);
      ends.forEach((end, i) => {
        end.value = String(active ? value[i] : i ? hi : lo);
        end.classList.toggle("bf-inactive", !active);
      });
      const text = active ? `${formatNumber(+value[0])} – ${formatNumber(+value[1])}` : "all";
      readout.textContent = text;
      ends.forEach((end) => end.setAttribute("aria-valuetext", `${p.name}: ${text}`));
      reset.hidden = !active;
    };
    const send = (moved) => {
      let [a, b] = ends.map((end) => roundForSpan(+end.value, hi - lo));
      if (a > b) [a, b] = moved === 0 ? [a, a] : [b, b]; // a thumb pushes the other
      const value = [a, b];
      input.show(value);
      this.filter({ type: "parameter", name: p.name, value });
    };
    ends.forEach((end, i) => (end.oninput = () => send(i)));
    reset.onclick = () => {
      input.show(null);
      this.filter({ type: "parameter", name: p.name, value: null });
    };
    input.show(p.default);
    label.append(ends[0], ends[1], readout, reset);
    return input;
  }

  // A filter message from a view or widget. At most one is in flight; while it is, the
  // newest message per view waits (a fast drag sends its latest position, never a queue).
  // Once an answer has taken a second (a lazy one, on Spark: docs/protocol.md), the page
  // shows that it is waiting, and sends what waits at once: the server cancels the slow
  // answer for the next interaction.
  filter(message) {
    const key = message.view ?? message.name ?? message.column ?? "*";
    this.pending.set(key, { message, t0: performance.now() });
    if (!this.busy) this.drain();
    else if (this.slow) this.sendPending();
  }

  sendPending() {
    for (const [key, entry] of this.pending) this.inflight.push(this.send1(key, entry));
    this.pending.clear();
  }

  send1(key, { message, t0 }) {
    return { key, message, t0, sent: performance.now(), reply: this.request(message) };
  }

  async drain() {
    this.busy = true;
    while (this.pending.size || this.inflight.length) {
      if (!this.inflight.length) {
        const [key, entry] = this.pending.entries().next().value;
        this.pending.delete(key);
        this.inflight.push(this.send1(key, entry));
      }
      const { key, message, t0, sent, reply: replied } = this.inflight[0];
      const timer = setInterval(() => this.waiting(sent), 250);
      const reply = await replied;
      clearInterval(timer);
      this.inflight.shift();
      if (this.slow) this.doneWaiting();
      const received = performance.now();
      if (reply.type === "update") await this.applyUpdate(reply);
      // the source view's own redraw waited for this answer (Chart.holdRedraw)
      const again = this.pending.has(key) || this.inflight.some((x) => x.key === key);
      if (!again) await this.charts.get(key)?.releaseRedraw();
      if (reply.type === "update") {
        const done = performance.now();
        this.measured({ type: message.type, view: key, total: done - t0, lazy: reply.lazy,
                        cancelled: reply.cancelled, roundTrip: received - sent,
                        render: done - received, engine: reply.ms });
      }
    }
    this.busy = false;
  }

  // An answer is still awaited `sent` ms after it was asked: after a second, say so
  // (with the server's `working` progress, when it sends any) and let the next
  // interaction through.
  waiting(sent) {
    const seconds = (performance.now() - sent) / 1000;
    if (seconds < 1) return;
    if (!this.slow) {
      this.slow = true;
      this.sendPending();
      this.waitLine = el("span", "bf-waiting", "");
      this.waitLine.setAttribute("role", "status");
      this.statusLine.after(this.waitLine);
    }
    const w = this.work;
    const share = w && w.fraction !== null && w.fraction !== undefined ? ` ${Math.round(100 * w.fraction)} %` : "";
    const what = w?.lazy ? "answering on Spark (not captured)" : "waiting for the answer";
    this.waitLine.textContent = `${what}… ${seconds.toFixed(1)} s${share}`;
  }

  doneWaiting() {
    this.slow = false;
    this.work = null;
    this.waitLine?.remove();
    this.waitLine = null;
  }

  // A `working` message: the server is still answering (a lazy answer on Spark).
  working(msg) {
    this.work = msg;
  }

  async applyUpdate(reply) {
    await Promise.all(Object.entries(reply.views).map(([name, v]) =>
      this.charts.get(name).update(v.values, undefined, v)));
    this.filters = reply.filters;
    this.showStatus(reply);
    this.showColumnFilters(reply.filters);
    await this.showFilters(reply.filters);
    this.onFilters(reply.filters);
    this.details?.refresh();
  }

  // Draw every view's filter as the session has it; a view the user is still moving
  // (a newer message of its own waits) keeps what the user drew.
  async showFilters(filters) {
    await Promise.all([...this.charts.values()]
      .filter((c) => !this.pending.has(c.name))
      .map((c) => c.showFilter(filters[c.name] ?? null)));
  }

  async request(message) {
    this.recorder.add(message);
    const reply = await this.send(message);
    if (reply.type === "error") this.showError(reply.message);
    return reply;
  }

  // Linked highlighting: hovering a bar of a highlight source shows the share of the
  // target views' bars that comes from it.
  async hover(view, bar) {
    const targets = this.highlightTargets.get(view);
    if (!targets) return;
    const seq = ++this.hoverSeq;
    if (bar === null) {
      await Promise.all(targets.map((t) => this.charts.get(t).update(null, null)));
      return;
    }
    const t0 = performance.now();
    const reply = await this.request({ type: "highlight", source: view, bars: [bar] });
    if (seq !== this.hoverSeq || reply.type !== "highlight") return; // a newer hover won
    await Promise.all(Object.entries(reply.views).map(([name, v]) =>
      this.charts.get(name).update(null, v.values)));
    this.measured({ type: "highlight", view, total: performance.now() - t0, engine: reply.ms });
  }

  // Forward lineage: hovering a row of the details table marks the bar it falls in, in
  // every view whose bars per row were captured (the reply's `pruned` ones cannot say).
  hoverRow(rid) {
    return this.markLineage(rid === null ? null : { type: "forward", rids: [rid] }, "details");
  }

  // ... through a join: hovering a dimension row (an airport) marks the bars its rows (the
  // flights from it) fall in.
  hoverKey(join, key) {
    return this.markLineage(key === null ? null : { type: "dimension_forward", join, key }, join);
  }

  // Marks the bars of every view the forward-lineage `message`'s reply names (null: none).
  async markLineage(message, view) {
    const seq = ++this.rowSeq;
    if (message === null) {
      await Promise.all([...this.charts.values()].map((c) => c.mark(null)));
      return;
    }
    const t0 = performance.now();
    const reply = await this.request(message);
    if (seq !== this.rowSeq || reply.type !== message.type) return; // a newer hover won
    await Promise.all([...this.charts.values()].map((c) => c.mark(reply.views[c.name] ?? null)));
    this.measured({ type: message.type, view, total: performance.now() - t0, engine: reply.ms });
  }

  async clearAll() {
    this.pending.clear();
    await Promise.all(this.inflight.map((x) => x.reply)); // answered (or cancelled) first
    const t0 = performance.now();
    const reply = await this.request({ type: "clear" });
    if (reply.type !== "update") return;
    this.showParameters({});
    await this.applyUpdate(reply);
    this.measured({ type: "clear", view: "*", total: performance.now() - t0, engine: reply.ms });
  }

  // A `state` the engine's owner pushed after changing the filters itself (the Jupyter
  // widget's kernel, when Python sets `filters`): every view's bars and drawn filter, the
  // parameter widgets and the status.
  async applyState(reply) {
    this.pending.clear();
    await Promise.all([...this.charts.values()].map((c) =>
      (reply.views[c.name] ? c.update(reply.views[c.name].values, undefined, reply.views[c.name]) : null)));
    this.showParameters(reply.filters);
    this.showColumnFilters(reply.filters);
    this.filters = reply.filters;
    await this.showFilters(reply.filters);
    this.showStatus(reply);
    this.details?.refresh();
  }

  // Parameter widgets showing `filters` (an inactive parameter: "(all)", or "all" beside
  // a slider).
  showParameters(filters) {
    for (const [name, input] of this.parameterInputs) {
      const value = parameterValue(filters[name]);
      if (input.show) input.show(value);
      else input.value = value === null ? "" : String(value);
    }
  }

  // Set the whole selection state (tagged filters, selection.js) in one `filters`
  // message: a restored address, a shared link, the Jupyter widget's `filters` trait.
  // All or nothing: a state the server refuses changes nothing (the error shows).
  async setFilters(state) {
    this.pending.clear();
    const reply = await this.request({ type: "filters", filters: state ?? {} });
    if (reply.type !== "update") return reply;
    this.showParameters(reply.filters);
    await this.applyUpdate(reply);
    return reply;
  }

  toggleRecording() {
    if (this.recorder.recording) {
      this.recorder.stop();
      this.recorder.download();
      this.recordButton.textContent = "● Record";
    } else {
      this.recorder.start(this.filters); // the trace starts from the current selection
      this.recordButton.textContent = "■ Stop and download trace";
    }
  }

  measured(m) {
    this.metrics.push(m);
    if (m.cancelled) {
      this.latencyLine.textContent = `last ${m.type}: cancelled by the next interaction`;
      return;
    }
    const engine = m.engine === undefined ? "" : ` (engine ${m.engine.toFixed(2)} ms)`;
    const lazy = m.lazy ? `; answered lazily on Spark in ${(m.lazy.ms / 1000).toFixed(2)} s: ${m.lazy.reason}` : "";
    this.latencyLine.textContent = `last ${m.type}: ${m.total.toFixed(1)} ms${engine}${lazy}`;
    this.latencyLine.title = m.lazy ? `views computed on Spark: ${m.lazy.views.join(", ")}` : "";
  }

  showStatus(reply) {
    if (reply.selected === undefined) return;
    this.selected = reply.selected;
    this.statusLine.textContent =
      `${fmt.format(reply.selected)} selected (${formatShare(reply.selected, this.description.rows)})`;
  }

  showError(message) {
    this.latencyLine.textContent = `error: ${message}`;
  }
}

// Which capture is served (brushfire/versions.py): when (to the minute), from which spec
// and source, by which Brushfire; the full hashes and time in its tooltip.
function versionNote(v) {
  const short = (x) => (x ? String(x).slice(0, 8) : "?");
  const when = v.created ? `captured ${v.created.replace("T", " ").slice(0, 16)} UTC` : "not cached";
  const note = el("span", "bf-version",
    `${when} · spec ${short(v.spec_sha256)} · source ${short(v.source_fingerprint)} · Brushfire ${v.brushfire_version ?? "?"}`);
  note.title = [`captured: ${v.created ?? "not cached"}`, `cache key: ${v.cache_key ?? "none"}`,
    `spec sha256: ${v.spec_sha256}`,
    `source fingerprint: ${v.source_fingerprint ?? "?"}`, `mode: ${v.mode}`].join("\n");
  return note;
}

const ROW = 4; // px: the grid's row unit (style.css: grid-auto-rows)
const PLAIN_DROPDOWN = 12; // values a dropdown lists plainly; more: a searchable picker
const GAP = 12; // px: space below a card (style.css: .bf-view margin-bottom)

export function el(tag, className = "", text = "") {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text) e.textContent = text;
  return e;
}

// Copy text through a selected text box (browsers without the clipboard API, or an
// address that is not a secure context); whether it worked.
function copyByHand(text) {
  const area = document.createElement("textarea");
  area.value = text;
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

// A view's title, by name.
function titleOf(description, name) {
  return description.views.find((v) => v.name === name)?.title ?? name;
}

// A setting kept in the browser (localStorage; none in a sandboxed frame).
function readSetting(key) {
  try {
    return globalThis.localStorage?.getItem(`brushfire.${key}`) ?? null;
  } catch {
    return null;
  }
}

function writeSetting(key, value) {
  try {
    globalThis.localStorage?.setItem(`brushfire.${key}`, value);
  } catch {
    // (a sandboxed frame: the choice lasts as long as the page)
  }
}

function button(text, onclick) {
  const b = el("button", "", text);
  b.onclick = onclick;
  return b;
}
