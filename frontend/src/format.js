// Values as people read them: integers with thousands separators, fractions without
// float32 noise (17.299999237060547 is the float32 nearest 17.3, shown as 17.3), instants
// as "2001-01-05 14:30" (UTC, as captured), null as ∅.

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const bySignificant = new Map(); // digits -> Intl.NumberFormat
const ISO = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

// (An integer beyond ±(2^53-1) comes as its decimal text, docs/protocol.md: shown as it
// is, every digit exact; a double would have rounded it.)
export function formatValue(v) {
  if (v === null || v === undefined) return "∅";
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "string" && ISO.test(v)) return formatInstant(v);
  return String(v);
}

export function formatNumber(x) {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "∅" : x > 0 ? "∞" : "−∞";
  if (Number.isInteger(x) && Math.abs(x) < 2 ** 53) return integer.format(x);
  return significant(shortestDigits(x)).format(x);
}

// A bar's measure: integers in full, other numbers to 6 significant digits.
export function formatMeasure(x) {
  if (typeof x !== "number" || !Number.isFinite(x) || Number.isInteger(x)) return formatValue(x);
  return significant(6).format(x);
}

// The fewest significant digits that give back x: as a float32 when x is one (a float32
// column widened to float64), else as a float64; at most 17.
export function shortestDigits(x) {
  const float32 = Math.fround(x) === x;
  for (let p = 1; p < 17; p++) {
    const y = Number(x.toPrecision(p));
    if (float32 ? Math.fround(y) === x : y === x) return p;
  }
  return 17;
}

function significant(p) {
  let f = bySignificant.get(p);
  if (!f) {
    f = new Intl.NumberFormat("en-US", { maximumSignificantDigits: p });
    bySignificant.set(p, f);
  }
  return f;
}

// "2001-01-05T14:30:00+00:00" -> "2001-01-05 14:30"; seconds and fractions only when
// present; an offset other than UTC is kept.
export function formatInstant(iso) {
  const m = ISO.exec(iso);
  if (!m) return iso;
  const [, date, hm, s, frac, zone] = m;
  let out = `${date} ${hm}`;
  if ((s && s !== "00") || (frac && Number(frac) !== 0)) out += `:${s ?? "00"}${frac && Number(frac) !== 0 ? frac.replace(/0+$/, "") : ""}`;
  if (zone && !/^(Z|[+-]00:?00)$/.test(zone)) out += ` ${zone}`;
  return out;
}

// A number at the precision a slider of `span` can set (about 1/1000 of it).
export function roundForSpan(x, span) {
  const decimals = span > 0 ? Math.max(0, Math.ceil(-Math.log10(span / 1000))) : 6;
  return Number(x.toFixed(Math.min(decimals, 12)));
}

// --- brush edges at the view's precision (issue 36, item 6) ---------------------------

// The largest double below x: a brush's upper end just below a bar's start selects the
// rows of the bars before it and none of the next (`lo <= x <= hi`, docs/protocol.md).
export function nextDown(x) {
  if (x === 0) return -Number.MIN_VALUE;
  const f = new Float64Array([x]);
  const bits = new BigInt64Array(f.buffer);
  bits[0] += x > 0 ? -1n : 1n;
  return f[0];
}

// A power of ten no larger than `span` (one pixel of a view, in data units): numbers a
// drag can tell apart are multiples of it.
export function stepFor(span) {
  return span > 0 && Number.isFinite(span) ? 10 ** Math.floor(Math.log10(span)) : 1e-6;
}

// x rounded to a multiple of `step` (a power of ten), without float noise: 0.1567 at 0.1
// is 0.2, not 0.20000000000000001.
export function roundToStep(x, step) {
  const decimals = Math.min(15, Math.max(0, -Math.round(Math.log10(step))));
  return Number((Math.round(x / step) * step).toFixed(decimals));
}

// Time steps a drag can land on (ms): a second, a minute, an hour, a day (UTC).
const TIME_STEPS = [1, 1000, 60_000, 3_600_000, 86_400_000];

// The coarsest time step no larger than `span` ms (one pixel of a time view).
export function timeStepFor(span) {
  return TIME_STEPS.filter((s) => s <= span).pop() ?? 1;
}

// An instant (ms) one microsecond before `ms` (a bar's start), as ISO: the last instant
// of the bar before it (timestamps have microseconds).
export function isoJustBefore(ms) {
  return new Date(ms - 1).toISOString().replace(/Z$/, "999Z");
}

// A brush end on a time view as people read it: a date when it is a day's first instant
// (or, for an upper end, its last: "through that day"), else date and time to the minute
// (seconds when it has any).
export function formatTimeEdge(iso, upper = false) {
  if (upper && /T23:59:59\.999(999)?Z$/.test(iso)) return iso.slice(0, 10);
  if (/T00:00:00(\.0+)?Z$/.test(iso)) return iso.slice(0, 10);
  return formatInstant(iso.replace(/\.000Z$/, "Z"));
}

// A number at a precision of `step` (a power of ten): 60.31 at 0.1 is "60.3".
export function formatAtStep(x, step) {
  if (!Number.isFinite(x)) return formatNumber(x);
  const decimals = Math.min(15, Math.max(0, -Math.round(Math.log10(step))));
  const rounded = Number(x.toFixed(decimals));
  return new Intl.NumberFormat("en-US", { maximumFractionDigits: decimals }).format(rounded === 0 ? 0 : rounded);
}

// `part` of `whole` as a percentage with enough digits to tell it from 0 % and 100 %:
// 57 of 3,000,000 is "0.0019 %", 2,999,999 of them "99.99997 %".
export function formatShare(part, whole) {
  if (!whole || part === 0) return "0 %";
  if (part === whole) return "100 %";
  const share = (100 * part) / whole;
  for (let d = 1; d < 12; d++) {
    const text = share.toFixed(d);
    const n = Number(text);
    const enough = n !== 0 && n !== 100 && (share >= 1 || Number(share.toPrecision(2)) === Number(share.toFixed(d)));
    if (enough) return `${text.replace(/(\.\d*?[1-9])0+$/, "$1")} %`;
  }
  return `${share.toPrecision(2)} %`;
}
