// A searchable picker for a dropdown parameter with many values (or any number, with
// `multiple`): a text box that filters the choices as one types (case-insensitive, any
// part of the value), a list to pick from with the mouse or the keyboard (arrows, Enter,
// Escape), and for `multiple` the picked values as chips, each with its ×. It is an ARIA
// combobox over a listbox. `onChange(value)`: the parameter's new value (one value, or
// the list picked; null: inactive, every row passes).

import { formatValue } from "./format.js";

const SHOWN = 200; // choices listed at once; typing narrows the rest

let pickers = 0;

export class ValuePicker {
  constructor(p, onChange) {
    this.p = p;
    this.multiple = Boolean(p.multiple);
    this.onChange = onChange;
    this.value = null;
    this.active = -1; // the highlighted choice, an index into `this.shown`
    this.shown = [];
    const id = `bf-picker-${++pickers}`;
    this.element = el("span", "bf-picker");
    this.element.dataset.parameter = p.name;
    this.chips = el("span", "bf-picker-chips");
    this.input = document.createElement("input");
    Object.assign(this.input, { type: "text", name: p.name, autocomplete: "off", spellcheck: false });
    this.input.setAttribute("role", "combobox");
    this.input.setAttribute("aria-autocomplete", "list");
    this.input.setAttribute("aria-expanded", "false");
    this.input.setAttribute("aria-controls", `${id}-list`);
    this.input.setAttribute("aria-label", `${p.name}: type to search ${p.values.length.toLocaleString("en-US")} values`);
    this.list = el("ul", "bf-picker-list");
    this.list.id = `${id}-list`;
    this.list.setAttribute("role", "listbox");
    if (this.multiple) this.list.setAttribute("aria-multiselectable", "true");
    this.list.hidden = true;
    this.note = el("li", "bf-picker-more");
    this.reset = el("button", "bf-reset", "×");
    this.reset.title = `Reset ${p.name}`;
    this.reset.setAttribute("aria-label", `Reset ${p.name}`);
    this.reset.onclick = () => this.change(null);
    this.element.append(this.chips, this.input, this.reset, this.list);
    this.labels = p.values.map((v) => formatValue(v));
    this.keys = p.values.map((v, i) => `${String(v)} ${this.labels[i]}`.toLowerCase());

    this.input.addEventListener("focus", () => {
      if (!this.multiple) this.input.select();
      this.open();
    });
    this.input.addEventListener("input", () => this.open());
    this.input.addEventListener("keydown", (e) => this.onKey(e));
    this.input.addEventListener("blur", () => this.close());
    this.list.addEventListener("mousedown", (e) => e.preventDefault()); // keep the focus
    this.list.addEventListener("click", (e) => {
      const item = e.target.closest("[data-index]");
      if (item) this.choose(+item.dataset.index);
    });
  }

  // Show the session's value (one value, a list, or null).
  show(value) {
    this.value = value === undefined ? null : value;
    const picked = this.pickedSet();
    this.chips.replaceChildren(...(this.multiple ? this.p.values.filter((v) => picked.has(String(v))).map((v) => this.chip(v)) : []));
    if (document.activeElement !== this.input) this.input.value = this.text();
    this.input.placeholder = this.multiple ? (picked.size ? "add…" : "(all): type to search") : "(all): type to search";
    this.reset.hidden = this.value === null;
    if (!this.list.hidden) this.render();
  }

  text() {
    if (this.multiple || this.value === null) return "";
    const i = this.p.values.findIndex((v) => String(v) === String(this.value));
    return i >= 0 ? this.labels[i] : String(this.value);
  }

  pickedSet() {
    if (this.value === null) return new Set();
    return new Set((this.multiple ? this.value : [this.value]).map(String));
  }

  chip(v) {
    const chip = el("span", "bf-chip", formatValue(v));
    const x = el("button", "bf-chip-remove", "×");
    x.title = `Remove ${formatValue(v)}`;
    x.setAttribute("aria-label", `Remove ${formatValue(v)}`);
    x.onclick = () => this.toggle(v);
    chip.append(x);
    return chip;
  }

  // The choices matching the typed text (none typed, or the value shown: all).
  matches() {
    const typed = this.input.value.trim().toLowerCase();
    const all = !typed || (!this.multiple && this.input.value === this.text());
    const out = [];
    for (let i = 0; i < this.keys.length; i++) if (all || this.keys[i].includes(typed)) out.push(i);
    return out;
  }

  open() {
    this.list.hidden = false;
    this.input.setAttribute("aria-expanded", "true");
    this.active = -1;
    this.render();
  }

  close() {
    this.list.hidden = true;
    this.input.setAttribute("aria-expanded", "false");
    this.input.removeAttribute("aria-activedescendant");
    this.input.value = this.text();
  }

  render() {
    const found = this.matches();
    // single: "(all)" first, to make the parameter inactive
    this.shown = [...(this.multiple ? [] : [-1]), ...found.slice(0, SHOWN)];
    const picked = this.pickedSet();
    const items = this.shown.map((i, k) => {
      const item = el("li", "bf-picker-option", i < 0 ? "(all)" : this.labels[i]);
      item.id = `${this.list.id}-${k}`;
      item.dataset.index = String(k);
      item.setAttribute("role", "option");
      const on = i < 0 ? this.value === null : picked.has(String(this.p.values[i]));
      item.setAttribute("aria-selected", String(on));
      if (k === this.active) item.classList.add("bf-active");
      return item;
    });
    if (!found.length) items.push(el("li", "bf-picker-more", "no value matches"));
    else if (found.length > SHOWN) {
      items.push(el("li", "bf-picker-more", `${(found.length - SHOWN).toLocaleString("en-US")} more: type to narrow`));
    }
    this.list.replaceChildren(...items);
  }

  onKey(e) {
    const n = this.shown.length;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      if (this.list.hidden) this.open();
      const down = e.key === "ArrowDown";
      if (!n) this.active = -1;
      else if (this.active < 0) this.active = down ? 0 : n - 1;
      else this.active = (this.active + (down ? 1 : n - 1)) % n;
      this.render();
      const item = this.list.children[this.active];
      if (item) {
        this.input.setAttribute("aria-activedescendant", item.id);
        item.scrollIntoView({ block: "nearest" });
      }
    } else if (e.key === "Enter") {
      const k = this.active >= 0 ? this.active : this.shown.findIndex((i) => i >= 0 && this.input.value.trim());
      if (k >= 0) this.choose(k);
    } else if (e.key === "Escape") {
      this.input.blur();
    } else if (e.key === "Backspace" && this.multiple && !this.input.value && this.value?.length) {
      this.toggle(this.value[this.value.length - 1]);
    } else {
      return;
    }
    e.preventDefault();
  }

  // Pick the k-th choice listed: one value (the list closes), or toggle it (multiple).
  choose(k) {
    const i = this.shown[k];
    if (i === undefined) return;
    if (i < 0) {
      this.change(null);
      this.input.blur();
    } else if (this.multiple) {
      this.toggle(this.p.values[i]);
      this.input.value = "";
      this.active = k;
      this.render();
    } else {
      this.change(this.p.values[i]);
      this.input.blur();
    }
  }

  toggle(v) {
    const picked = this.pickedSet();
    if (picked.has(String(v))) picked.delete(String(v));
    else picked.add(String(v));
    const value = this.p.values.filter((x) => picked.has(String(x)));
    this.change(value.length ? value : null);
  }

  change(value) {
    this.show(value);
    this.onChange(value);
  }
}

function el(tag, className = "", text = "") {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text) e.textContent = text;
  return e;
}
