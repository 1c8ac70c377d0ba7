// Records the client messages of a session as a trace (docs/trace.md) that
// `brushfire bench` replays: {"format": "brushfire-trace", "version": 1, "dashboard",
// "events": [{"t": ms since the start, "message": {...}}]}.

export class Recorder {
  constructor(dashboard) {
    this.dashboard = dashboard;
    this.recording = false;
    this.events = [];
  }

  start() {
    this.recording = true;
    this.events = [];
    this.t0 = performance.now();
  }

  stop() {
    this.recording = false;
  }

  add(message) {
    if (!this.recording) return;
    const { id, ...rest } = message; // ids belong to a connection, not to the trace
    this.events.push({ t: Math.round((performance.now() - this.t0) * 1000) / 1000, message: rest });
  }

  trace() {
    return { format: "brushfire-trace", version: 1, dashboard: this.dashboard, events: this.events };
  }

  download() {
    const blob = new Blob([JSON.stringify(this.trace(), null, 1)], { type: "application/json" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `${this.dashboard}-trace.json`;
    a.click();
    URL.revokeObjectURL(a.href);
  }
}
