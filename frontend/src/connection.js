// A WebSocket session with a Brushfire server (docs/protocol.md).
//
// `request(message)` sends one client message with a fresh id and resolves with the
// server's reply to it (an `update`, `details`, ..., `skipped` or `error`). While the
// dashboard is still being captured the server streams `progress` messages, then
// `ready` or `failed`; those go to the `onStatus` callback. `opened` resolves when the
// socket is open.

export class Connection {
  constructor(url, { onStatus = () => {}, onClose = () => {} } = {}) {
    this.url = url;
    this.onStatus = onStatus;
    this.onClose = onClose;
    this.nextId = 1;
    this.waiting = new Map(); // id -> resolve
  }

  open() {
    this.ws = new WebSocket(this.url);
    const opened = new Promise((resolve, reject) => {
      this.ws.onopen = resolve;
      this.ws.onerror = () => reject(new Error(`cannot connect to ${this.url}`));
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
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.ws.send(JSON.stringify({ ...message, id }));
    });
  }

  close() {
    this.ws?.close();
  }
}
