// Details on demand: a paged table of the input rows behind the current selection
// (backward lineage), refreshed after each update while it is open. Values are formatted
// by type (format.js): numbers right-aligned without float noise, instants readable.
// "Download rows" saves all of them (CSV or Parquet), streamed by the server. On a star
// schema, "Rows of" lists instead the rows of a joined (dimension) table behind the
// selection, each with how many of the source's rows reach it (lineage through the join:
// `dimension`); hovering one marks the bars its rows fall in (`dimension_forward`), and
// "Download rows" saves those listed (a user downloads what they see).
//
// Its controls ("Show rows", "Download rows" and the format) go where the page keeps its
// actions (`controls`, the header); the table opens in `element`, a panel along the
// bottom of the window (in a notebook, below the views), so the views stay in sight while
// hovering a row marks its bars.

import { save } from "./chart.js";
import { el } from "./dashboard.js";
import { formatValue } from "./format.js";

const fmt = new Intl.NumberFormat("en-US");

export class DetailsTable {
  // `download(format, join)`: the URL of the rows behind the current selection (with a
  // join's name: of its rows behind it), or null.
  // `onHoverRow(rid | null)`: the pointer entered a row (forward lineage shows its bars)
  // or left the table. `joins`: the description's ({name, table, key}); `onHoverKey(join,
  // key | null)`: the pointer entered a dimension row, or left the table.
  constructor(declaration, request, download = null, onHoverRow = () => {}, joins = [],
    onHoverKey = () => {}) {
    this.columns = declaration.columns;
    this.pageSize = declaration.page_size;
    this.request = request;
    this.onHoverRow = onHoverRow;
    this.joins = joins;
    this.onHoverKey = onHoverKey;
    this.join = null; // a join's name: its dimension rows are listed; null: the source's rows
    this.page = 0;
    this.order = null; // {column, descending}: the rows in that column's order; null: rid order
    this.open = false;
    this.seq = 0;
    this.element = el("div", "bf-details");
    this.element.setAttribute("role", "region");
    this.element.setAttribute("aria-label", "Rows behind the selection");
    this.element.hidden = true;
    const bar = el("div", "bf-details-bar");
    this.toggle = el("button", "", "Show rows");
    this.toggle.dataset.action = "details";
    this.toggle.title = "List the rows behind the selection (hover one to mark its bars)";
    this.toggle.setAttribute("aria-expanded", "false");
    this.toggle.onclick = () => this.setOpen(!this.open);
    this.prev = el("button", "", "‹ Prev");
    this.prev.onclick = () => this.show(this.page - 1);
    this.next = el("button", "", "Next ›");
    this.next.onclick = () => this.show(this.page + 1);
    this.info = el("span", "bf-details-info", "");
    const close = el("button", "bf-details-close", "×");
    close.title = "Hide the rows";
    close.setAttribute("aria-label", "Hide the rows");
    close.onclick = () => this.setOpen(false);
    bar.append(el("strong", "", "Rows behind the selection"), ...this.joinControl(), this.prev, this.next,
      this.info, close);
    this.controls = [this.toggle, ...(download ? this.downloadControl(download) : [])];
    this.table = el("table", "bf-table");
    this.table.onmouseleave = () => (this.join ? this.onHoverKey(this.join, null) : this.onHoverRow(null));
    this.element.append(bar, this.table);
    this.prev.disabled = this.next.disabled = true;
  }

  // "Rows of": the source's rows, or a join's dimension rows (none without joins).
  joinControl() {
    if (!this.joins.length) return [];
    const pick = el("select", "bf-rows-of");
    pick.setAttribute("aria-label", "Rows of");
    pick.title = "List the source's rows, or the rows of a joined table behind the selection";
    pick.append(new Option("source rows", ""));
    for (const j of this.joins) pick.append(new Option(`${j.name} rows (${j.table})`, j.name));
    pick.onchange = () => {
      this.join = pick.value || null;
      this.order = null;
      this.describeDownload();
      this.show(0);
    };
    return [pick];
  }

  downloadControl(download) {
    const format = el("select", "bf-format");
    format.setAttribute("aria-label", "Download format");
    format.append(new Option("CSV", "csv"), new Option("Parquet", "parquet"));
    const button = el("button", "", "Download rows");
    button.dataset.action = "download";
    this.downloadButton = button;
    this.describeDownload();
    button.onclick = () => (this.join ? this.downloadJoin(download(format.value, this.join))
      : save(download(format.value, null)));
    return [button, format];
  }

  // A join's rows are bounded by its table (not streamed): fetched first, so that a refused
  // request (e.g. while a filter answered on Spark is active) says why in the panel instead
  // of ending as a failed download.
  async downloadJoin(href) {
    let response;
    try {
      response = await fetch(href);
    } catch (e) {
      return this.refused(e.message);
    }
    if (!response.ok) {
      const detail = await response.json().then((b) => b?.detail ?? response.statusText, () => response.statusText);
      return this.refused(detail);
    }
    const name = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") ?? "")?.[1] ?? "";
    const url = URL.createObjectURL(await response.blob());
    save(url, name);
  }

  refused(message) {
    if (!this.open) this.setOpen(true); // (its listing, refused alike, says why)
    else this.info.textContent = `not downloaded: ${message}`;
  }

  // The button's title says which rows it saves: those "Rows of" lists.
  describeDownload() {
    if (!this.downloadButton) return;
    this.downloadButton.title = this.join
      ? `Download every ${this.join} row behind the selection, each with its count of selected rows`
      : "Download every row behind the selection";
  }

  setOpen(open) {
    this.open = open;
    this.toggle.textContent = open ? "Hide rows" : "Show rows";
    this.toggle.setAttribute("aria-expanded", String(open));
    this.element.hidden = !open;
    this.element.closest(".bf-dashboard")?.classList.toggle("bf-details-open", open);
    if (open) this.show(0);
    else {
      this.table.replaceChildren();
      this.info.textContent = "";
      this.prev.disabled = this.next.disabled = true;
    }
  }

  refresh() {
    if (this.open) this.show(0);
  }

  async show(page) {
    const seq = ++this.seq;
    const t0 = performance.now();
    if (this.join) {
      const join = this.join;
      const reply = await this.request({ type: "dimension", join, page, page_size: this.pageSize });
      if (seq !== this.seq) return; // a newer request won
      if (reply.type === "error") return this.fail(reply.message);
      if (reply.type !== "dimension") return;
      this.page = page;
      this.renderDimension(reply, performance.now() - t0);
      return;
    }
    const order = this.order ? { order_by: this.order.column, descending: this.order.descending } : {};
    const reply = await this.request({ type: "details", page, page_size: this.pageSize, ...order });
    if (seq !== this.seq) return; // a newer request won
    if (reply.type === "error") return this.fail(reply.message);
    if (reply.type !== "details") return;
    this.page = page;
    this.render(reply, performance.now() - t0);
  }

  // A refused request (an error: e.g. `dimension` while a filter answered on Spark is
  // active): no rows rather than those of another selection or of the other choice.
  fail(message) {
    this.table.replaceChildren();
    this.info.textContent = `no rows: ${message}`;
    this.prev.disabled = this.next.disabled = true;
  }

  // Order the rows by a column: ascending, then descending, then back to rid order (the
  // engine orders all the selected rows, as SQL's ORDER BY ... NULLS LAST, rid).
  sortBy(column) {
    const o = this.order;
    if (column === "rid" || (o?.column === column && o.descending)) this.order = null;
    else this.order = { column, descending: o?.column === column };
    this.show(0);
  }

  render(reply, ms) {
    const text = textColumns(reply.rows, ["rid", ...this.columns]);
    const head = el("tr");
    for (const c of ["rid", ...this.columns]) {
      const th = el("th", text.has(c) ? "bf-text" : "");
      const sorted = c === "rid" ? !this.order : this.order?.column === c;
      th.setAttribute("aria-sort", !sorted ? "none" : this.order?.descending ? "descending" : "ascending");
      const b = el("button", "", c);
      b.dataset.sort = c;
      b.title = c === "rid" ? "Rows in their order in the source" : `Order the rows by ${c} (again: the other way)`;
      b.onclick = () => this.sortBy(c);
      th.append(b);
      head.append(th);
    }
    const rows = reply.rows.map((r) => {
      const tr = el("tr");
      tr.dataset.rid = r.rid;
      tr.onmouseenter = () => this.onHoverRow(r.rid);
      for (const c of ["rid", ...this.columns]) {
        tr.append(el("td", text.has(c) ? "bf-text" : "", formatValue(r[c])));
      }
      return tr;
    });
    this.table.replaceChildren(head, ...rows);
    const first = reply.page * this.pageSize;
    this.info.textContent = reply.total === 0 ? "no rows selected"
      : `rows ${fmt.format(first + 1)}–${fmt.format(first + reply.rows.length)} of ` +
        `${fmt.format(reply.total)} (${ms.toFixed(1)} ms)`;
    this.prev.disabled = reply.page === 0;
    this.next.disabled = first + reply.rows.length >= reply.total;
  }

  // A join's dimension rows: its key, its details columns and how many of the selection's
  // rows reach it, most first (the engine's order).
  renderDimension(reply, ms) {
    const join = this.joins.find((j) => j.name === reply.join);
    const columns = [join.key, ...this.columns.filter((c) => c.startsWith(`${join.name}.`) && c !== join.key),
      "rows"]; // (as the engine's: named even when no row is behind the selection)
    const text = textColumns(reply.rows, columns);
    const head = el("tr");
    for (const c of columns) {
      const th = el("th", text.has(c) ? "bf-text" : "", c);
      th.title = c === "rows" ? "Rows of the selection with this row of the join (most first)" : "";
      head.append(th);
    }
    const rows = reply.rows.map((r) => {
      const tr = el("tr");
      tr.dataset.key = JSON.stringify(r[join.key]);
      tr.onmouseenter = () => this.onHoverKey(join.name, r[join.key]);
      for (const c of columns) {
        tr.append(el("td", text.has(c) ? "bf-text" : "", formatValue(r[c])));
      }
      return tr;
    });
    this.table.replaceChildren(head, ...rows);
    const first = reply.page * this.pageSize;
    const unmatched = reply.unmatched ? `; ${fmt.format(reply.unmatched)} selected rows without one` : "";
    this.info.textContent = (reply.total === 0 ? `no ${join.name} rows behind the selection`
      : `${join.name} rows ${fmt.format(first + 1)}–${fmt.format(first + reply.rows.length)} of ` +
        `${fmt.format(reply.total)}`) + `${unmatched} (${ms.toFixed(1)} ms)`;
    this.prev.disabled = reply.page === 0;
    this.next.disabled = first + reply.rows.length >= reply.total;
  }
}

// The columns of text, left-aligned with their header (numbers and instants are right-
// aligned): those whose first value on the page is a string, not an instant nor a float's
// "NaN", "Infinity" or "-Infinity" (as replies write a float key's), nor an integer's
// digits (as replies write one beyond ±(2^53-1): 16 digits or more).
const NOT_TEXT = /^(\d{4}-\d\d-\d\dT|NaN$|-?Infinity$|-?\d{16,}$)/;

function textColumns(rows, columns) {
  return new Set(columns.filter((c) => {
    const v = rows.find((r) => r[c] !== null && r[c] !== undefined)?.[c];
    return typeof v === "string" && !NOT_TEXT.test(v);
  }));
}
