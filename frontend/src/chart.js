// One view of a dashboard: the Vega-Lite spec the server built with Altair
// (brushfire/charts.py), embedded with vega-embed. Its `bars` dataset holds one row per
// bar: geometry, `full` (all rows), `value` (under the other views' filters) and `hl`
// (linked highlighting). Brushes are the selection parameters `brush` (interval / rect)
// and `pick` (points); `onFilter` receives them as protocol messages.

import embed from "vega-embed";
import { changeset, truthy } from "vega";

export class Chart {
  constructor(description, { onFilter, onHover }) {
    this.description = description; // one entry of the server's `views`
    this.name = description.name;
    this.onFilter = onFilter;
    this.onHover = onHover;
    this.base = description.spec.datasets.bars; // bar geometry and `full`; never given to Vega
    this.values = description.values;
    this.highlight = null;
  }

  // Fresh row objects each time: Vega tags the tuples it ingests with an id (a symbol
  // property that spreading would copy), and a "new" row with an old id is no change.
  rows() {
    return this.base.map((r, i) => ({ ...r, value: this.values[i], hl: this.highlight?.[i] ?? null }));
  }

  // (Re-)draw into `element`; a fresh embed also drops any brush drawn before.
  async mount(element) {
    this.element = element;
    this.view?.finalize();
    const spec = structuredClone(this.description.spec);
    spec.datasets.bars = this.rows();
    const result = await embed(element, spec, { actions: false, renderer: "canvas" });
    this.view = result.view;
    if (this.description.brush === "interval" || this.description.brush === "rect") {
      this.view.addSignalListener("brush", (_, value) => this.onFilter(this.brushMessage(value)));
    } else if (this.description.brush === "points") {
      this.view.addSignalListener("pick", (_, value) => this.onFilter(this.pickMessage(value)));
    }
    this.view.addEventListener("mouseover", (_, item) => {
      if (item?.datum?.bar !== undefined) this.onHover(this.name, item.datum.bar);
    });
    this.view.addEventListener("mouseout", () => this.onHover(this.name, null));
  }

  brushMessage(value) {
    const x = value?.x0;
    if (!x) return { type: "clear", view: this.name };
    const msg = { type: "brush", view: this.name, interval: this.bounds(x) };
    if (this.description.brush === "rect") msg.y = value.y0 ? value.y0.map(Number) : [null, null];
    return msg;
  }

  pickMessage(value) {
    const labels = value?.label;
    if (!labels || labels.length === 0) return { type: "clear", view: this.name };
    return { type: "select", view: this.name, values: labels };
  }

  // Brush edges in data units: numbers, or ISO instants for temporal views.
  bounds([lo, hi]) {
    if (this.description.type === "temporal") {
      return [new Date(+lo).toISOString(), new Date(+hi).toISOString()];
    }
    return [+lo, +hi];
  }

  // New filtered values (and optionally highlight shares) from the server; resolves
  // when the view has re-rendered.
  update(values, highlight = undefined) {
    if (values) this.values = values;
    if (highlight !== undefined) this.highlight = highlight;
    if (!this.view) return Promise.resolve();
    return this.view.change("bars", changeset().remove(truthy).insert(this.rows())).runAsync();
  }
}
