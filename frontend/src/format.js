// Values as people read them: integers with thousands separators, fractions without
// float32 noise (17.299999237060547 is the float32 nearest 17.3, shown as 17.3), instants
// as "2001-01-05 14:30" (UTC, as captured), null as ∅.

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const bySignificant = new Map(); // digits -> Intl.NumberFormat
const ISO = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

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
