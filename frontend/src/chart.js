// One view of a dashboard in its card: the Vega-Lite spec the server built with Altair
// (brushfire/charts.py), embedded once with vega-embed and then only changed.
//
// Its `bars` dataset holds one row per bar: geometry, `label`, `full` (all rows), `value`
// (under the other views' filters), `hl` (linked highlighting) and, for categorical views,
// `sel` (false: left out of the pick). Updates modify just the fields that changed, in a
// Vega changeset on that dataset; nothing is re-embedded.
//
// Filters: an interval or rect brush is Vega-Lite's selection parameter `brush`; the
// user's drags come from its signal, and a filter set elsewhere (clear, clear-all, the
// widget's Python side, a restored state, the keyboard) is drawn by setting the brush's
// pixel signals (`brush_x`, `brush_y`) through the Vega view API, quietly. Categorical
// views are picked by click (shift-click adds or removes). `onFilter` receives protocol
// messages. The keyboard moves (arrows) and resizes (shift + arrows) a brush by whole
// bars, or walks and picks categorical bars.
//
// A drag's ends are where the pointer was, rounded to the view's precision: a power of
// ten (or a second, minute, hour or day) no larger than one pixel, so the brush sent, the
// readout and the address agree and carry no float noise (0.2, not 0.1567). A brush that
// snaps (the spec's `snap`, or Shift while dragging; the keyboard's always) covers whole
// bars and selects exactly their rows: from a bar's start to just below the next bar's
// start (the largest double, or the last microsecond, below it), with open ends over a
// clamped edge bar. The engine answers `lo <= x <= hi` on raw values either way.

import embed from "vega-embed";
import { changeset, scale as vegaScale, Error as VEGA_ERRORS_ONLY } from "vega";
import {
  formatAtStep, formatMeasure, formatNumber, formatTimeEdge, formatValue, isoJustBefore, nextDown,
  roundToStep, stepFor, timeStepFor,
} from "./format.js";
import { filterOfMessage, pickedValues, xInterval, yInterval } from "./selection.js";

const KEY_HELP = {
  interval: "Left and right arrows brush one bar and move the brush by one bar; with Shift they resize it; Escape clears it.",
  rect: "Arrow keys brush one cell and move the brush by one cell; with Shift they resize it; Escape clears it.",
  points: "Arrow keys walk the bars; Enter or Space picks or unpicks the bar; Escape clears the pick.",
};
const MIN_WIDTH = 200;
const NARROW_BAR = 15; // px per column below which a categorical is drawn as rows (its narrow spec)
const HOLD_MS = 40; // longest wait of a view's own redraw for the answer to its filter

export class Chart {
  constructor(description, { onFilter, onHover, onResize = () => {}, fileName = null }) {
    this.description = description; // one entry of the server's `views`
    this.name = description.name;
    this.kind = description.brush; // interval, rect, points or null
    this.meta = metaOf(description.spec); // of the spec drawn (`embedView` may pick the narrow one)
    // brush ends are times (ISO instants) or numbers (a calendar part's view: its values)
    this.temporal = description.bounds === "time";
    this.snap = Boolean(description.snap); // brushes snap to whole bars (Shift: the other way)
    this.shift = false; // Shift held during the current drag
    this.onFilter = onFilter;
    this.onHover = onHover;
    this.onResize = onResize;
    this.fileName = fileName ?? description.name; // of exported images, without extension
    this.base = description.spec.datasets.bars; // bar geometry, labels and `full`
    this.values = description.values;
    this.counts = description.counts ?? []; // rows per bar (shown beside an order statistic)
    this.caveats = description.caveats ?? {}; // rows not shown, by reason (docs/protocol.md)
    this.highlight = null;
    this.filterKey = "null"; // JSON of the filter drawn (tagged, as in the session's `filters`)
    this.filter = null;
    this.quiet = 0; // > 0 while we set the brush ourselves: its signal is not the user's
    this.picked = new Set();
    this.cursor = null; // keyboard position among categorical bars
    this.fit = false; // the measure scaled to the selection (`fit_domain`), not to all rows
  }

  rows() {
    const picking = this.kind === "points" && this.picked.size > 0;
    return this.base.map((r, i) => ({
      ...r, value: this.values[i], hl: this.highlight?.[i] ?? null,
      sel: picking ? this.picked.has(r.label) : null, cur: i === this.cursor,
      ...("clamp" in r ? { clamp: this.clampedInto(i) } : {}),
    }));
  }

  // Rows clamped into bar i (an edge bar of a clamped histogram), under the filters.
  clampedInto(i) {
    let n = 0;
    for (const [reason, bar] of Object.entries(this.meta.clamped ?? {})) {
      if (bar === i) n += this.caveats[reason] ?? 0;
    }
    return n;
  }

  // "41,220 rows not shown: delay is null · 3,100 rows in the first bar: delay below -60"
  caveatText() {
    const texts = this.meta.caveats ?? {};
    return Object.entries(this.caveats)
      .filter(([reason, n]) => n > 0 && texts[reason])
      .map(([reason, n]) => `${formatNumber(n)} row${n === 1 ? "" : "s"} ${texts[reason]}`)
      .join(" · ");
  }

  showCaveats() {
    if (!this.note) return;
    const text = this.caveatText();
    this.note.textContent = text;
    this.note.hidden = !text;
  }

  // Build the card (title, filter readout, controls, the view) in `card` and embed.
  async mount(card) {
    this.card = card;
    const id = `bf-${this.name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
    const head = el("div", "bf-view-head");
    const title = el("h2", "bf-view-title", this.description.title);
    title.id = `${id}-title`;
    this.readout = el("span", "bf-view-filter", "");
    this.readout.setAttribute("aria-live", "polite");
    this.clearButton = el("button", "bf-view-clear", "×");
    this.clearButton.title = "Clear this view's filter";
    this.clearButton.setAttribute("aria-label", `Clear the filter of ${this.description.title}`);
    this.clearButton.hidden = true;
    this.clearButton.onclick = () => this.clearFilter();
    head.append(title);
    if (this.description.lazy) { // its brush was not captured: answered on Spark
      const note = el("span", "bf-lazy-note", "on Spark");
      note.title = "No crossfilter group declares this view's brush, so its lineage was not captured: "
        + "brushing it is answered lazily, on Spark (seconds, not milliseconds).";
      head.append(note);
    }
    head.append(this.readout);
    this.topSelect = null; // a rows view's "top N" control (placed by `embedView`)
    if (this.meta.fit) head.append(this.fitButton());
    head.append(this.exportControl(), this.clearButton);
    this.head = head;
    const about = el("p", "bf-sr", `${this.description.spec.description ?? ""} ${KEY_HELP[this.kind] ?? ""}`);
    about.id = `${id}-about`;
    this.body = el("div", "bf-chart");
    this.body.tabIndex = 0;
    this.body.setAttribute("role", "group");
    this.body.setAttribute("aria-roledescription", "chart");
    this.body.setAttribute("aria-labelledby", title.id);
    this.body.setAttribute("aria-describedby", about.id);
    this.body.addEventListener("keydown", (e) => this.onKey(e));
    for (const type of ["pointerdown", "pointermove"]) {
      this.body.addEventListener(type, (e) => {
        this.shift = e.shiftKey;
        if (type === "pointerdown") this.dragging = true;
      }, true);
    }
    // a snapped brush is drawn on its bars once the drag ends (redrawn during it, the
    // drag's start would move with each pixel rounding)
    window.addEventListener("pointerup", () => {
      this.dragging = false;
      if (this.snapDue) this.redrawSnapped();
    });
    this.note = el("p", "bf-caveats", "");
    this.note.setAttribute("aria-live", "polite");
    card.replaceChildren(head, this.body, this.note, about);
    this.showCaveats();
    await this.embedView();
  }

  // The spec to draw at `width`: the narrow one (categorical columns as rows) when the
  // columns would be narrower than NARROW_BAR.
  variantFor(width) {
    const narrow = this.description.narrow_spec;
    const bars = metaOf(this.description.spec).bars ?? 1;
    return narrow && (width - 60) / bars < NARROW_BAR ? "narrow" : "wide";
  }

  // Embed the view's spec for the card's width (again when the card crosses NARROW_BAR),
  // with the bars, picks, highlight and scale it has now.
  async embedView() {
    const width = this.availableWidth();
    this.variant = this.variantFor(width);
    const spec = structuredClone(this.variant === "narrow" ? this.description.narrow_spec : this.description.spec);
    this.meta = metaOf(spec);
    this.body.className = `bf-chart bf-shape-${this.meta.shape}`;
    if (this.meta.shape === "rows" && !this.topSelect) {
      this.topSelect = this.topControl();
      this.readout.after(this.topSelect);
    } else if (this.meta.shape !== "rows" && this.topSelect) {
      this.topSelect.remove();
      this.topSelect = null;
    }
    delete spec.title; // the card's heading
    spec.datasets.bars = this.rows();
    spec.width = width;
    spec.autosize = { type: "fit-x", contains: "padding" };
    if (this.meta.shape === "bars") spec.height = barHeight(width);
    for (const p of spec.params ?? []) {
      if (p.name === "fit_domain" || p.name === "other_k") p.value = this.fitSignals()[p.name] ?? p.value;
    }
    this.view?.finalize();
    this.renderNow = null; // (holdRedraw wraps the new view's renderer)
    this.holding = false;
    const result = await embed(this.body, spec, {
      actions: false, renderer: "canvas", logLevel: VEGA_ERRORS_ONLY,
      tooltip: { formatTooltip: (bar) => this.tooltip(bar) },
    });
    this.view = result.view;
    this.tuples = this.view.data("bars").slice().sort((a, b) => a.bar - b.bar);
    this.width = width;
    if (this.kind === "interval" || this.kind === "rect") {
      this.view.addSignalListener("brush", (_, value) => {
        if (this.quiet) return;
        const snapped = this.snap !== this.shift;
        this.sendFilter(this.brushMessage(value, snapped));
        if (snapped && this.filter) {
          this.snapDue = true;
          if (!this.dragging) this.redrawSnapped();
        }
      });
    } else if (this.kind === "points") {
      this.view.addEventListener("click", (event, item) => this.click(event, item));
    }
    this.view.addEventListener("mouseover", (_, item) => {
      if (item?.datum?.bar !== undefined) this.onHover(this.name, item.datum.bar);
    });
    this.view.addEventListener("mouseout", () => this.onHover(this.name, null));
    if (this.meta.shape === "cells") await this.fitCells();
  }

  availableWidth() {
    return Math.max(MIN_WIDTH, Math.floor(this.body.clientWidth));
  }

  // Heatmaps: cells about square, from the plot width Vega fitted, within sane bounds.
  async fitCells() {
    const [nx, ny] = this.meta.cells ?? [1, 1];
    const plot = this.view.width();
    const height = Math.round(Math.min(Math.max(plot * ny / nx, 160), Math.max(560, plot * 0.6)));
    if (Math.abs(height - this.view.height()) < 1) return;
    await this.quietly(() => this.view.height(height));
  }

  // The card was resized: fit the view to it and redraw the brush at its new pixels (or
  // embed the other spec, when the card crossed NARROW_BAR).
  async resize() {
    if (!this.view) return;
    const width = this.availableWidth();
    if (width === this.width) return;
    if (this.variantFor(width) !== this.variant) {
      await this.embedView();
      this.onResize(this);
      return;
    }
    this.width = width;
    await this.quietly(() => {
      this.view.width(width);
      if (this.meta.shape === "bars") this.view.height(barHeight(width));
    });
    if (this.meta.shape === "cells") await this.fitCells();
    if (this.filter && this.kind !== "points") await this.drawBrush(this.filter);
    this.onResize(this);
  }

  async quietly(change) {
    this.quiet++;
    try {
      change();
      await this.view.runAsync();
    } finally {
      this.quiet--;
    }
  }

  // New filtered values (and optionally highlight shares) from the server, with the
  // view's rows per bar and caveats (`view`: its entry of an update); only the bars whose
  // numbers changed go to Vega. Resolves when the view has re-rendered.
  update(values, highlight = undefined, view = undefined) {
    if (values) this.values = values;
    if (highlight !== undefined) this.highlight = highlight;
    if (view?.counts) this.counts = view.counts;
    if (view?.caveats) {
      this.caveats = view.caveats;
      this.showCaveats();
    }
    if (!this.view) return Promise.resolve();
    const cs = changeset();
    let changed = 0;
    for (const t of this.tuples) {
      const i = t.bar;
      if (values && !same(t.value, values[i])) {
        cs.modify(t, "value", values[i]);
        changed++;
      }
      if ("clamp" in t && view?.caveats && t.clamp !== this.clampedInto(i)) {
        cs.modify(t, "clamp", this.clampedInto(i));
        changed++;
      }
      const hl = this.highlight?.[i] ?? null;
      if (highlight !== undefined && !same(t.hl, hl)) {
        cs.modify(t, "hl", hl);
        changed++;
      }
    }
    if (this.fit) {
      this.quiet++; // (the brush does not move: this only rescales the measure)
      try { changed += this.setSignals(this.fitSignals()); } finally { this.quiet--; }
    }
    if (!changed) return Promise.resolve();
    return this.view.change("bars", cs).runAsync();
  }

  // --- export -------------------------------------------------------------------------

  // "⤓": a menu saving the view as drawn (bars, brush, scale) as PNG or SVG, under its
  // title and filter.
  exportControl() {
    const box = el("span", "bf-export");
    const b = el("button", "bf-view-export", "⤓");
    b.dataset.action = "export";
    b.title = "Save this view as an image (PNG or SVG)";
    b.setAttribute("aria-label", `Save ${this.description.title} as an image`);
    b.setAttribute("aria-haspopup", "menu");
    b.setAttribute("aria-expanded", "false");
    const menu = el("span", "bf-export-menu");
    menu.setAttribute("role", "menu");
    menu.hidden = true;
    for (const format of ["png", "svg"]) {
      const item = el("button", "", format.toUpperCase());
      item.setAttribute("role", "menuitem");
      item.dataset.format = format;
      item.onclick = async () => {
        menu.hidden = true;
        b.setAttribute("aria-expanded", "false");
        save(await this.imageURL(format), `${this.fileName}.${format}`);
      };
      menu.append(item);
    }
    b.onclick = () => {
      menu.hidden = !menu.hidden;
      b.setAttribute("aria-expanded", String(!menu.hidden));
    };
    box.append(b, menu);
    return box;
  }

  // The view as an image URL (a PNG at twice the pixels, or SVG), with its title and
  // filter written above it.
  async imageURL(format) {
    const heading = [this.description.title, this.filter === null ? "" : this.describeFilter(this.filter)]
      .filter(Boolean).join(" · ");
    const top = 24;
    if (format === "svg") {
      const svg = await this.view.toSVG();
      const size = /<svg[^>]*\bwidth="([\d.]+)"[^>]*\bheight="([\d.]+)"/.exec(svg);
      const [w, h] = size ? [+size[1], +size[2]] : [this.view.width(), this.view.height()];
      const text = heading.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
      const whole = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h + top}" viewBox="0 0 ${w} ${h + top}">`
        + `<rect width="100%" height="100%" fill="#fff"/>`
        + `<text x="4" y="16" font-family="sans-serif" font-size="13" font-weight="600" fill="#222">${text}</text>`
        + `<g transform="translate(0, ${top})">${svg}</g></svg>`;
      return URL.createObjectURL(new Blob([whole], { type: "image/svg+xml" }));
    }
    const scale = 2;
    const chart = await this.view.toCanvas(scale);
    const canvas = document.createElement("canvas");
    canvas.width = chart.width;
    canvas.height = chart.height + top * scale;
    const g = canvas.getContext("2d");
    g.fillStyle = "#fff";
    g.fillRect(0, 0, canvas.width, canvas.height);
    g.fillStyle = "#222";
    g.font = `600 ${13 * scale}px sans-serif`;
    g.fillText(heading, 4 * scale, 16 * scale);
    g.drawImage(chart, 0, top * scale);
    return canvas.toDataURL("image/png");
  }

  // --- scale to the selection -------------------------------------------------------

  fitButton() {
    const b = el("button", "bf-view-fit", "⤢");
    b.dataset.action = "fit";
    b.title = "Scale to the selection: the measure's axis fits the selected rows (the bars of all rows are cut off); again: all rows";
    b.setAttribute("aria-label", `Scale ${this.description.title} to the selection`);
    b.setAttribute("aria-pressed", "false");
    b.onclick = () => this.setFit(!this.fit);
    this.fitToggle = b;
    return b;
  }

  // Scale the measure to the selection (`on`), or back to all rows.
  async setFit(on) {
    if (!this.meta.fit || this.fit === on) return;
    this.fit = on;
    this.fitToggle?.setAttribute("aria-pressed", String(on));
    this.fitToggle?.classList.toggle("bf-on", on);
    this.card?.classList.toggle("bf-fitted", on);
    if (this.view) await this.quietly(() => this.setSignals(this.fitSignals()));
  }

  // The signals scaling the measure: `fit_domain`, and for a dwarfed '(other)' bar drawn
  // on its own scale, `other_k` (its bar of all rows as long as the plot).
  fitSignals() {
    const out = { fit_domain: this.fitDomain() };
    if (this.meta.other_clipped) {
      const top = out.fit_domain ? out.fit_domain[1] : this.meta.other_top;
      out.other_k = top / (this.base[this.meta.other].full || 1);
    }
    return out;
  }

  // Set the signals that changed; how many did.
  setSignals(signals) {
    let changed = 0;
    for (const [name, value] of Object.entries(signals)) {
      if (JSON.stringify(value) === JSON.stringify(this.view.signal(name))) continue;
      this.view.signal(name, value);
      changed++;
    }
    return changed;
  }

  // The measure's domain for the selected rows (and the highlighted ones): from 0 (or the
  // smallest value below it) to the largest, made nice; on a log scale, the positive
  // values'; null (all rows) when it is not scaled to the selection or has no values.
  fitDomain() {
    if (!this.fit || !this.view) return null;
    const skip = this.meta.other_clipped ? this.meta.other : null;
    const values = [...this.values, ...(this.highlight ?? [])]
      .filter((v, i) => typeof v === "number" && Number.isFinite(v) && i % this.values.length !== skip);
    const kind = this.view.scale(this.meta.fit).type;
    const shown = kind === "log" ? values.filter((v) => v > 0) : values;
    if (!shown.length) return null;
    let lo = Math.min(...shown);
    let hi = Math.max(...shown);
    if (kind !== "log") [lo, hi] = [Math.min(0, lo), Math.max(0, hi)];
    if (hi === lo) hi = lo + (kind === "log" ? lo : 1);
    if (kind === "log") return [lo, hi];
    return vegaScale(kind === "sqrt" ? "sqrt" : "linear")().domain([lo, hi]).nice().domain();
  }

  // Mark `bars` (forward lineage of a hovered row: the bars it falls in) in the highlight
  // colour, whole; null unmarks. Linked highlighting and marks share the `hl` field.
  mark(bars) {
    this.marked = bars;
    this.card?.classList.toggle("bf-marked", Boolean(bars?.length));
    if (!bars) return this.update(null, null);
    const on = new Set(bars);
    return this.update(null, this.values.map((v, i) => (on.has(i) ? (v || this.base[i].full || 0) : null)));
  }

  // The tooltip of bar `bar` (the spec's tooltip is the bar number): its name, values
  // under the filters, over all rows and highlighted, formatted as it shows.
  tooltip(bar) {
    const row = this.base[+bar];
    if (!row) return "";
    const { key = "bar", measure = "value" } = this.meta.tooltip ?? {};
    const lines = [[key, formatValue(row.label)], [`${measure}, selected`, formatMeasure(this.values[+bar])],
                   [`${measure}, all rows`, formatMeasure(row.full)]];
    if (this.description.aggregate !== "count" && this.counts[+bar] !== undefined) {
      lines.splice(2, 0, ["rows, selected", formatNumber(this.counts[+bar])]);
    }
    const hl = this.highlight?.[+bar];
    if (hl !== null && hl !== undefined) lines.push([`${measure}, highlighted`, formatMeasure(hl)]);
    const clamped = "clamp" in row ? this.clampedInto(+bar) : 0;
    if (clamped) {
      const reason = Object.keys(this.meta.clamped ?? {}).find((r) => this.meta.clamped[r] === +bar);
      lines.push(["clamped here", `${formatNumber(clamped)} rows ${(this.meta.caveats?.[reason] ?? "").replace(/^in the (first|last) bar: /, "")}`]);
    }
    return `<table>${lines.map(([k, v]) => `<tr><td class="key">${escape(k)}</td><td class="value">${escape(v)}</td></tr>`).join("")}</table>`;
  }

  // --- filters ----------------------------------------------------------------------

  // Show `filter` (this view's entry of the session's `filters`; null: none), wherever it
  // came from. Drawing is quiet: it sends nothing.
  async showFilter(filter) {
    const key = JSON.stringify(filter ?? null);
    if (key === this.filterKey || !this.view) return;
    this.noteFilter(filter ?? null);
    if (this.kind === "points") await this.showPicked(new Set(pickedValues(filter)));
    else if (this.kind) await this.drawBrush(filter ?? null);
  }

  noteFilter(filter) {
    this.filter = filter;
    this.filterKey = JSON.stringify(filter);
    if (!this.holding) this.showReadout();
  }

  showReadout() {
    this.readout.textContent = this.filter === null ? "" : this.describeFilter(this.filter);
    this.readout.title = this.filter === null ? "" : this.exactText(this.filter);
    this.clearButton.hidden = this.filter === null;
  }

  // A filter the user made here: remember it as drawn, and send it.
  sendFilter(message) {
    const filter = filterOfMessage(message);
    this.holdRedraw();
    this.noteFilter(filter);
    this.onFilter(message);
  }

  // While the answer to the user's filter is on its way, this view's own redraw (the
  // moved brush, the picked bars, the readout) waits for it, at most HOLD_MS: the brush
  // and the views it filters then change in the same frame, and the browser paints once
  // per move instead of twice. Vega has no public hook for this: the view's renderer is
  // wrapped (without one, nothing is held).
  holdRedraw() {
    const r = this.view?._renderer;
    if (!r?.renderAsync) return;
    if (!this.renderNow) {
      this.renderNow = r.renderAsync.bind(r);
      r.renderAsync = (scene, ...rest) => (this.holding ? Promise.resolve(r) : this.renderNow(scene, ...rest));
    }
    this.holding = true;
    clearTimeout(this.holdTimer);
    this.holdTimer = setTimeout(() => this.releaseRedraw(), HOLD_MS);
  }

  releaseRedraw() {
    if (!this.holding) return Promise.resolve();
    this.holding = false;
    clearTimeout(this.holdTimer);
    this.showReadout();
    return this.renderNow(this.view.scenegraph().root);
  }

  clearFilter() {
    if (this.kind === "points") this.showPicked(new Set());
    else this.drawBrush(null);
    this.sendFilter({ type: "clear", view: this.name });
  }

  async drawBrush(filter) {
    const v = this.view;
    const x = xInterval(filter);
    const y = yInterval(filter);
    await this.quietly(() => {
      v.signal("brush_x", x ? this.pixels("x", x) : [0, 0]);
      if (this.kind === "rect") v.signal("brush_y", x ? this.pixels("y", y ?? [null, null]) : [0, 0]);
    });
  }

  // Pixel span of the data interval [lo, hi] on a position scale (open ends: the edges);
  // at least one pixel wide, since Vega-Lite reads an empty span as no brush.
  pixels(channel, [lo, hi]) {
    const s = this.view.scale(channel);
    const [r0, r1] = s.range();
    const at = (d, edge) => (d === null || d === undefined ? edge : s(this.temporal ? +new Date(d) : +d));
    const clamp = (p) => Math.min(Math.max(p, Math.min(r0, r1)), Math.max(r0, r1));
    let [a, b] = [clamp(at(lo, r0)), clamp(at(hi, r1))].sort((p, q) => p - q);
    if (b - a < 1) b = a + 1;
    return [a, b];
  }

  // The message for a drawn brush (`value`: the selection's data extents), its ends
  // snapped to whole bars or rounded to the view's precision.
  brushMessage(value, snapped = false) {
    const x = value?.x0;
    if (!x) return { type: "clear", view: this.name };
    const msg = { type: "brush", view: this.name, interval: this.brushEnds("x", x, snapped) };
    if (this.kind === "rect") msg.y = value.y0 ? this.brushEnds("y", value.y0, snapped) : [null, null];
    return msg;
  }

  // Brush ends in data units (numbers, or ISO instants on a time axis) for the data
  // extent `ends` on a position channel.
  brushEnds(channel, ends, snapped) {
    const [lo, hi] = ends.map(Number).sort((a, b) => a - b);
    const time = this.temporal && channel === "x";
    if (snapped) {
      const edges = this.edges(`${channel}0`, `${channel}1`);
      // within half a pixel of an edge is on it (a brush drawn on edges reads back so),
      // unless bars are that narrow
      const narrowest = Math.min(...edges.slice(1).map((e, i) => e - edges[i]));
      const slack = Math.min(this.dataPerPixel(channel) / 2, narrowest / 4);
      return this.barEnds(channel, edges, ...barsCovering(edges, lo + slack, hi - slack));
    }
    if (time) {
      const step = timeStepFor(this.dataPerPixel(channel));
      return [lo, hi].map((t) => isoOf(Math.round(t / step) * step));
    }
    const step = stepFor(this.dataPerPixel(channel));
    return [roundToStep(lo, step), roundToStep(hi, step)];
  }

  // Draw a snapped brush on the bars it selects (after the current pulse: Vega may be
  // running it).
  redrawSnapped() {
    this.snapDue = false;
    Promise.resolve().then(() => (this.filter ? this.drawBrush(this.filter) : null));
  }

  // The data span of one pixel along a position channel.
  dataPerPixel(channel) {
    const s = this.view.scale(channel);
    const [d0, d1] = s.domain().map(Number);
    const [r0, r1] = s.range();
    return Math.abs(d1 - d0) / Math.max(1, Math.abs(r1 - r0));
  }

  // The brush ends that select exactly bars a to b - 1 (edge indices) along a channel:
  // from bar a's start to just below bar b's (the last bar holds its end; over a
  // clamped edge bar, an open end; calendar parts: values are whole, bars centred on them).
  barEnds(channel, edges, a, b) {
    const last = edges.length - 1;
    const [clampLo, clampHi] = this.clamped(channel);
    const time = this.temporal && channel === "x";
    const lo = a === 0 && clampLo ? null : time ? isoOf(edges[a]) : edges[a];
    let hi;
    if (b === last && clampHi) hi = null;
    else if (this.meta.part || (b === last && !time)) hi = edges[b];
    else hi = time ? isoJustBefore(edges[b]) : nextDown(edges[b]);
    return [lo, hi];
  }

  // Whether the first and last bars along a channel hold the values beyond the extent.
  clamped(channel) {
    if (this.meta.shape === "cells") return Array(2).fill(Boolean(this.meta.clamp?.[channel === "x" ? 0 : 1]));
    return Array(2).fill(channel === "x" && "clamp" in (this.base[0] ?? {}));
  }

  // --- categorical picks ------------------------------------------------------------

  click(event, item) {
    const bar = item?.datum?.bar;
    if (bar === undefined || item.mark?.marktype !== "rect") {
      if (this.picked.size) this.pick(new Set());
      return;
    }
    const label = this.base[bar].label;
    const next = new Set(this.picked);
    if (event.shiftKey) {
      if (next.has(label)) next.delete(label);
      else next.add(label);
    } else if (next.size === 1 && next.has(label)) {
      next.clear();
    } else {
      next.clear();
      next.add(label);
    }
    this.pick(next);
  }

  pick(labels) {
    this.showPicked(labels);
    const values = this.base.map((r) => r.label).filter((l) => labels.has(l));
    this.sendFilter(values.length ? { type: "select", view: this.name, values } : { type: "clear", view: this.name });
  }

  showPicked(labels) {
    this.picked = labels;
    const cs = changeset();
    for (const t of this.tuples) {
      const sel = labels.size ? labels.has(t.label) : null;
      if (t.sel !== sel) cs.modify(t, "sel", sel);
    }
    return this.view.change("bars", cs).runAsync();
  }

  // --- keyboard ---------------------------------------------------------------------

  onKey(e) {
    if (!this.kind) return;
    if (e.key === "Escape" || e.key === "Delete" || e.key === "Backspace") {
      if (this.filter !== null) this.clearFilter();
      e.preventDefault();
      return;
    }
    const arrows = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };
    if (this.kind === "points") {
      const step = { ArrowLeft: -1, ArrowUp: -1, ArrowRight: 1, ArrowDown: 1 }[e.key];
      if (step) this.moveCursor(step);
      else if ((e.key === "Enter" || e.key === " ") && this.cursor !== null) this.togglePick(this.cursor);
      else return;
      e.preventDefault();
      return;
    }
    const move = arrows[e.key];
    if (!move || (this.kind === "interval" && move[0] === 0)) return;
    e.preventDefault();
    this.keyBrush(move, e.shiftKey);
  }

  // Move (or with `resize`, grow/shrink at its far end) the brush by whole bars; the
  // first key brushes one bar (cell), the first on screen in the arrow's direction. The
  // brush selects exactly the bars it covers (`barEnds`).
  keyBrush([dx, dy], resize) {
    const current = this.filter;
    const along = (channel, step, interval, all) => {
      const edges = this.edges(`${channel}0`, `${channel}1`);
      const up = channel === "y";
      let span;
      if (!current) span = firstBar(edges, (step || 1) * this.direction(channel, edges, up));
      else {
        span = spanOf(edges, interval, this.temporal && !up, all);
        if (step) span = stepSpan(span, step * this.direction(channel, edges, up), edges.length - 1, resize);
      }
      return this.barEnds(channel, edges, span[0], span[1]);
    };
    const msg = { type: "brush", view: this.name, interval: along("x", dx, xInterval(current), false) };
    if (this.kind === "rect") msg.y = along("y", dy, yInterval(current), true);
    this.sendFilter(msg);
    this.drawBrush(this.filter);
  }

  // +1 when a larger value is further right (x) or further up (y) on screen.
  direction(channel, edges, up = false) {
    const s = this.view.scale(channel);
    const increasing = s(edges[edges.length - 1]) > s(edges[0]);
    return (up ? !increasing : increasing) ? 1 : -1;
  }

  // Sorted bar edges along a geometry field pair (epoch ms for temporal views).
  edges(lo, hi) {
    const key = `${lo}:${hi}`;
    this.edgeCache ??= {};
    if (!this.edgeCache[key]) {
      const v = (d) => (this.temporal ? +new Date(d) : +d);
      const set = new Set();
      for (const r of this.base) {
        set.add(v(r[lo]));
        set.add(v(r[hi]));
      }
      this.edgeCache[key] = [...set].sort((a, b) => a - b);
    }
    return this.edgeCache[key];
  }

  moveCursor(step) {
    const n = this.tuples.length;
    const shown = this.meta.shape === "rows" ? this.shownBars() : null;
    let i = this.cursor === null ? (step > 0 ? -1 : n) : this.cursor;
    do {
      i = Math.min(Math.max(i + step, 0), n - 1);
    } while (shown && !shown(i) && i > 0 && i < n - 1);
    this.setCursor(i);
  }

  shownBars() {
    const top = this.view.signal("top_shown");
    return (i) => i < top || i === this.meta.other;
  }

  setCursor(i) {
    const cs = changeset();
    for (const t of this.tuples) {
      const cur = t.bar === i;
      if (t.cur !== cur) cs.modify(t, "cur", cur);
    }
    this.cursor = i;
    this.readout.textContent = `${formatValue(this.base[i].label)}: ${formatNumber(this.values[i] ?? NaN)}` +
      (this.picked.has(this.base[i].label) ? " (picked)" : "");
    this.view.change("bars", cs).runAsync();
  }

  togglePick(i) {
    const label = this.base[i].label;
    const next = new Set(this.picked);
    if (next.has(label)) next.delete(label);
    else next.add(label);
    this.pick(next);
  }

  // Long categoricals (rows): how many are shown.
  topControl() {
    const select = el("select", "bf-top");
    select.setAttribute("aria-label", `Bars shown in ${this.description.title}`);
    const n = this.meta.bars - (this.meta.other === null || this.meta.other === undefined ? 0 : 1);
    for (const k of [this.meta.top, 100, 300, 1000].filter((k, i, a) => k < n && a.indexOf(k) === i)) {
      select.append(new Option(`top ${k}`, String(k)));
    }
    select.append(new Option(`all ${n}`, String(n)));
    select.value = String(Math.min(this.meta.top, n));
    select.onchange = async () => {
      await this.quietly(() => this.view.signal("top_shown", +select.value));
      this.onResize(this);
    };
    return select;
  }

  // The readout of a filter, at the view's precision (a pixel's worth of digits; dates
  // as dates; a calendar part's bars by name); its tooltip has the exact ends.
  describeFilter(filter) {
    if (this.kind === "points") {
      const values = pickedValues(filter);
      const shown = values.slice(0, 4).map(formatValue).join(", ");
      return values.length > 4 ? `${shown} +${values.length - 4} more` : shown;
    }
    const span = (channel, interval) => {
      const [lo, hi] = interval ?? [null, null];
      if (this.meta.part && channel === "x") return this.partsText(lo, hi);
      return `${this.edgeText(channel, lo)} – ${this.edgeText(channel, hi, true)}`;
    };
    if (this.kind === "rect") return `x ${span("x", xInterval(filter))}, y ${span("y", yInterval(filter))}`;
    return span("x", xInterval(filter));
  }

  edgeText(channel, v, upper = false) {
    if (v === null || v === undefined) return "…";
    if (this.temporal && channel === "x") {
      const iso = new Date(v).toISOString();
      if (upper && iso.endsWith("T23:59:59.999Z")) return iso.slice(0, 10); // through that day
      const step = timeStepFor(this.dataPerPixel(channel));
      return formatTimeEdge(isoOf(Math.round(+new Date(v) / step) * step));
    }
    return formatAtStep(+v, stepFor(this.dataPerPixel(channel)));
  }

  // A calendar part's brush: the names of the bars whose values it holds ("Tue – Fri").
  partsText(lo, hi) {
    const inside = this.base.filter((r) => {
      const v = (r.x0 + r.x1) / 2;
      return (lo === null || v >= lo) && (hi === null || v <= hi);
    });
    if (!inside.length) return "none";
    const first = inside[0].label;
    const last = inside[inside.length - 1].label;
    return first === last ? String(first) : `${first} – ${last}`;
  }

  // The exact filter, for the readout's tooltip.
  exactText(filter) {
    if (this.kind === "points" || filter === null) return "";
    const span = (i) => (i ? `[${i.map((v) => (v === null ? "open" : v)).join(", ")}]` : "[open, open]");
    const x = span(xInterval(filter));
    return this.kind === "rect" ? `x ${x}, y ${span(yInterval(filter))}` : x;
  }
}

// The edge indices [a, b] of the bars that the data interval [lo, hi] touches (at
// least one bar).
function barsCovering(edges, lo, hi) {
  const last = edges.length - 1;
  let a = 0;
  while (a < last - 1 && edges[a + 1] <= lo) a++;
  let b = last;
  while (b > a + 1 && edges[b - 1] >= hi) b--;
  return [a, b];
}

// One bar at the start (`direction` > 0: towards larger values) or the end of the edges.
function firstBar(edges, direction) {
  const last = edges.length - 1;
  return direction > 0 ? [0, 1] : [last - 1, last];
}

// An instant (ms) as ISO, without a zero fraction.
function isoOf(ms) {
  return new Date(ms).toISOString().replace(".000Z", "Z");
}

// Bars: a height that suits the width, within bounds.
function barHeight(width) {
  return Math.round(Math.min(Math.max(width * 0.38, 140), 300));
}

// Edge indices [a, b] (a < b) covering the interval [lo, hi]; none: the first tenth
// (or with `all`, everything).
function spanOf(edges, interval, temporal, all = false) {
  const last = edges.length - 1;
  if (!interval) return all ? [0, last] : [0, Math.max(1, Math.round(last / 10))];
  const v = (d) => (d === null || d === undefined ? null : temporal ? +new Date(d) : +d);
  const lo = v(interval[0]);
  const hi = v(interval[1]);
  let a = 0;
  if (lo !== null) while (a < last && edges[a + 1] <= lo) a++;
  let b = last;
  if (hi !== null) while (b > a + 1 && edges[b - 1] >= hi) b--;
  return [a, Math.max(b, a + 1)];
}

function stepSpan([a, b], step, last, resize) {
  if (resize) return [a, Math.min(Math.max(b + step, a + 1), last)];
  const shift = Math.min(Math.max(step, -a), last - b);
  return [a + shift, b + shift];
}

function escape(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

// Save a URL as a file (the browser's download; a blob URL is revoked after).
export function save(url, name = "") {
  const a = el("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  if (url.startsWith("blob:")) setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// A spec's hints for clients (charts.py: `usermeta.brushfire`).
function metaOf(spec) {
  return spec.usermeta?.brushfire ?? { shape: "bars" };
}

function same(a, b) {
  return a === b || (a !== a && b !== b); // NaN equals NaN here
}

function el(tag, className = "", text = "") {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text) e.textContent = text;
  return e;
}
