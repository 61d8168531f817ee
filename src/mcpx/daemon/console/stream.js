// /v1/events read with fetch, not EventSource. EventSource hands an event named by its
// "event:" line only to listeners of that name, so a page would need the list of every
// kind the daemon may send, and a new kind would be missed without a word. Read here,
// every event reaches one callback whatever its kind, the stream stays exactly what the
// CLI reads, and reconnecting is done as EventSource does it: after a dropped
// connection, the next request says the last id seen (Last-Event-ID) and the daemon
// replays what came after it (a "gap" event says what it could not).

const WAITS = [500, 1000, 2000, 4000, 8000]; // ms before each retry; the last repeats

// follow(path, {onEvent(event), onState(state, detail)}) → stop(). States: "connecting",
// "open" (detail: the id it resumed after, or null), "lost" (detail: {wait} ms until the
// retry, {why}), "stopped".
export function follow(path, { onEvent, onState }) {
  let lastId = null;
  let stopped = false;
  let failures = 0;
  let controller = null;
  let timer = null;
  let live = false; // a request is being made or read

  // One "data:" JSON event per block; "id:" is remembered, comments (":") skipped.
  const dispatch = (block) => {
    let data = "";
    let id = null;
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const cut = line.indexOf(":");
      const field = cut < 0 ? line : line.slice(0, cut);
      const value = cut < 0 ? "" : line.slice(cut + 1).replace(/^ /, "");
      if (field === "data") data += (data ? "\n" : "") + value;
      else if (field === "id") id = value;
    }
    if (id !== null && /^\d+$/.test(id)) lastId = id;
    if (!data) return;
    try {
      onEvent(JSON.parse(data));
    } catch (exc) {
      if (!(exc instanceof SyntaxError)) throw exc;
    }
  };

  const connect = async () => {
    if (stopped) return;
    onState("connecting");
    live = true;
    controller = new AbortController();
    const headers = { Accept: "text/event-stream" };
    if (lastId !== null) headers["Last-Event-ID"] = lastId;
    let why = "the stream ended";
    try {
      const response = await fetch(path, { headers, signal: controller.signal, cache: "no-store" });
      if (!response.ok || !(response.headers.get("content-type") || "").startsWith("text/event-stream")) {
        throw new Error(`the daemon answered ${response.status}`);
      }
      failures = 0;
      onState("open", lastId);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          dispatch(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
        }
      }
    } catch (exc) {
      why = exc.message;
    }
    live = false;
    if (stopped) return;
    const wait = WAITS[Math.min(failures, WAITS.length - 1)];
    failures += 1;
    onState("lost", { wait, why });
    timer = setTimeout(connect, wait);
  };

  // The browser knows first when its network went: the stream is dropped then (no read
  // would come) and made again, resuming, as soon as the network is back.
  const offline = () => controller?.abort(new Error("the browser is offline"));
  const online = () => {
    if (stopped || live) return;
    clearTimeout(timer);
    failures = 0;
    connect();
  };
  window.addEventListener("offline", offline);
  window.addEventListener("online", online);
  connect();
  return () => {
    stopped = true;
    window.removeEventListener("offline", offline);
    window.removeEventListener("online", online);
    clearTimeout(timer);
    controller?.abort();
    onState("stopped");
  };
}
