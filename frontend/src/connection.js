// A WebSocket session with a Brushfire server (docs/protocol.md).
//
// `request(message)` sends one client message with a fresh id and resolves with the
// server's reply to it (an `update`, `details`, ..., `skipped` or `error`). While the
// dashboard is still being captured the server streams `progress` messages, then
// `ready` or `failed`; those go to the `onStatus` callback; `reloaded` (the server serves
// a newer capture: `serve --watch`) goes to `onReloaded`. `opened` resolves when the
// socket is open. `getJSON` reads the server's HTTP API. A server started with an access
// token needs it on every request: `withToken` adds it to a URL (docs/deploy.md).

export class Connection {
  constructor(url, { onStatus = () => {}, onClose = () => {}, onWorking = () => {},
    onReloaded = () => {} } = {}) {
    this.url = url;
    this.onReloaded = onReloaded;
    this.onStatus = onStatus;
    this.onClose = onClose;
    this.onWorking = onWorking; // `working`: an answer is taking long (docs/protocol.md)
    this.nextId = 1;
    this.waiting = new Map(); // id -> resolve
  }

  open() {
    this.ws = new WebSocket(this.url);
    const opened = new Promise((resolve, reject) => {
      this.ws.onopen = resolve;
      this.ws.onerror = () => reject(new Error(`cannot connect to ${withoutQuery(this.url)}: the server `
        + "is down, or refused this page (its origin or the access token; see docs/deploy.md)"));
    });
    this.ws.onmessage = (event) => this.receive(JSON.parse(event.data));
    this.ws.onclose = (event) => {
      for (const resolve of this.waiting.values()) {
        resolve({ type: "error", message: "connection closed" });
      }
      this.waiting.clear();
      this.onClose(event);
    };
    return opened;
  }

  receive(msg) {
    if (msg.type === "progress" || msg.type === "ready" || msg.type === "failed") {
      this.onStatus(msg);
      return;
    }
    if (msg.type === "working") {
      this.onWorking(msg);
      return;
    }
    if (msg.type === "reloaded") {
      this.onReloaded(msg);
      return;
    }
    const resolve = this.waiting.get(msg.id);
    if (resolve) {
      this.waiting.delete(msg.id);
      resolve(msg);
    } else if (msg.type === "error") {
      console.error("brushfire:", msg.message);
    }
  }

  request(message) {
    const id = this.nextId++;
    // a closed socket drops what is sent, unanswered: the request would wait for ever
    // (and the page with it, "waiting for the answer…")
    if (this.ws.readyState !== WebSocket.OPEN) {
      return Promise.resolve({ type: "error", id, message: "not connected to the server (the connection closed): reload to reconnect" });
    }
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.ws.send(JSON.stringify({ ...message, id }));
    });
  }

  close() {
    this.ws?.close();
  }
}

export async function getJSON(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    // a server that does not allow this page's origin sends no CORS headers: the browser
    // then reports a network error, never the server's reason
    throw new Error(`cannot read ${withoutQuery(url)} (${e.message}): is the server running, and `
      + `does it allow this page's origin (brushfire serve --allow-origin ${location.origin})?`);
  }
  if (!response.ok) throw new Error(`${withoutQuery(url)}: ${response.status} ${await response.text()}`);
  return response.json();
}

// `url` (absolute, or relative to the page) with `?token=` added, when there is a token.
export function withToken(url, token) {
  if (!token) return url;
  const u = new URL(url, location.href);
  u.searchParams.set("token", token);
  return u.toString();
}

// DashboardUI's `exportURL` over the server's export at `rows` (/api/dashboards/<name>/rows):
// where the rows behind a selection state download from; with a join's name, that join's
// rows behind it (what the details panel lists). One place for the page and the widget.
export function rowsURL(rows, token) {
  return (format, state, join) => withToken(`${rows}?format=${format}`
    + `&filters=${encodeURIComponent(JSON.stringify(state ?? {}))}`
    + (join ? `&join=${encodeURIComponent(join)}` : ""), token);
}

// For messages: never show the token.
function withoutQuery(url) {
  return String(url).split("?")[0];
}
