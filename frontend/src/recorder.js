// Records the client messages of a session as a trace (docs/trace.md) that
// `brushfire bench` replays: {"format": "brushfire-trace", "version": 1, "dashboard",
// "state": the selection when recording started (tagged filters), "events": [{"t": ms
// since the start, "message": {...}}]}.

export class Recorder {
  constructor(dashboard) {
    this.dashboard = dashboard;
    this.recording = false;
    this.events = [];
    this.state = {};
  }

  start(state = {}) {
    this.recording = true;
    this.events = [];
    this.state = structuredClone(state ?? {});
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
    const trace = { format: "brushfire-trace", version: 1, dashboard: this.dashboard };
    if (Object.keys(this.state).length) trace.state = this.state;
    return { ...trace, events: this.events };
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
