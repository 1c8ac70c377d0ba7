// The selection state, as the server keeps it (backend/brushfire/selection.py): each
// active filter a tagged value, keyed by view or parameter name:
//   {"interval": [lo, hi]}                       histogram / temporal brush
//   {"rect": {"x": [lo, hi], "y": [lo, hi]}}     heatmap brush
//   {"values": [...]}                            categorical selection
//   {"parameter": value}                         parameter
// Replies carry it in `filters`; a `filters` message sets a whole state at once; the
// page's address keeps it (#filters=...). This module reads and builds the tagged values.

// The tagged filter a brush, select or parameter message sets (null: none).
export function filterOfMessage(message) {
  if (message.type === "select") return { values: message.values };
  if (message.type === "parameter") return message.value === null ? null : { parameter: message.value };
  if (message.type === "brush") {
    return message.y === undefined || message.y === null
      ? { interval: message.interval }
      : { rect: { x: message.interval, y: message.y } };
  }
  return null;
}

// A brush's x interval ([lo, hi]), or null.
export function xInterval(filter) {
  return filter?.interval ?? filter?.rect?.x ?? null;
}

// A rect brush's y interval, or null.
export function yInterval(filter) {
  return filter?.rect?.y ?? null;
}

// A categorical selection's values ([] when none).
export function pickedValues(filter) {
  return filter?.values ?? [];
}

// A parameter's value (null when inactive).
export function parameterValue(filter) {
  return filter?.parameter ?? null;
}

// The name prefix of a filter on a column of the source (`filter` message), in a state.
export const COLUMN = "column:";

// [column, tagged filter] of each filter on a column of the source in `state`.
export function columnFilters(state) {
  return Object.entries(state ?? {}).filter(([name]) => name.startsWith(COLUMN))
    .map(([name, f]) => [name.slice(COLUMN.length), f]);
}

// The state in the page's address (#filters=<JSON>), or null.
export function stateInAddress(hash) {
  const m = /(?:^#|&)filters=([^&]*)/.exec(hash);
  if (!m) return null;
  try {
    const state = JSON.parse(decodeURIComponent(m[1]));
    return state && typeof state === "object" && !Array.isArray(state) ? state : null;
  } catch {
    return null;
  }
}

// The address fragment keeping `state` ("" for no filters).
export function addressOf(state) {
  return Object.keys(state ?? {}).length ? `#filters=${encodeURIComponent(JSON.stringify(state))}` : "";
}
