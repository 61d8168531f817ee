// The Events page (the /v1/events stream) and the Calls & tasks page (/v1/log,
// /v1/tasks, /v1/stats).

import { api, clear, el, errorText, jsonBlock, uid, when } from "./dom.js";
import { renderResult } from "./render.js";
import { follow } from "./stream.js";

const KEPT = 500;

function labelled(label, input) {
  return el("span", { class: "control" }, el("label", { for: input.id }, label), input);
}

// -- Events ------------------------------------------------------------------------

export function eventsPage(main, life) {
  // The kinds seen so far are offered as the filter's choices: none is listed by hand.
  const seenKinds = el("datalist", { id: uid("kinds") });
  const kind = el("input", { id: uid("kind"), type: "search", placeholder: "e.g. call or server.log", list: seenKinds.id });
  const server = el("input", { id: uid("server"), type: "search", placeholder: "server name" });
  const pause = el("button", { type: "button", "aria-pressed": "false" }, "Pause");
  const status = el("p", { class: "help", role: "status" }, "connecting…");
  const rows = el("tbody");
  const kept = [];
  let held = 0;
  const matches = (e) => (!kind.value || e.kind.startsWith(kind.value.trim())) && (!server.value || (e.server || "") === server.value.trim());
  const row = (e) => el("tr", { "data-kind": e.kind },
    el("td", {}, e.seq === undefined ? "" : String(e.seq)), el("td", {}, when(e.ts)), el("td", {}, e.kind),
    el("td", {}, String(e.server ?? "")), el("td", {}, el("code", { class: "data" }, JSON.stringify(e.data))));
  const redraw = () => {
    clear(rows);
    kept.filter(matches).slice(-200).reverse().forEach((e) => rows.append(row(e)));
  };
  const paused = () => pause.getAttribute("aria-pressed") === "true";
  pause.addEventListener("click", () => {
    const now = !paused();
    pause.setAttribute("aria-pressed", String(now));
    pause.textContent = now ? "Resume" : "Pause";
    if (!now) { held = 0; redraw(); }
  });
  kind.addEventListener("input", redraw);
  server.addEventListener("input", redraw);
  main.append(el("p", { class: "help" }, "The daemon's events as they happen; after a dropped connection the browser resumes from the last event it saw (Last-Event-ID)."),
    el("div", { class: "row" }, labelled("Kind starts with", kind), labelled("Server", server), pause), seenKinds, status,
    el("div", { class: "scroll" }, el("table", { class: "events" },
      el("thead", {}, el("tr", {}, ["Seq", "Time", "Kind", "Server", "Data"].map((h) => el("th", { scope: "col" }, h)))), rows)));
  const take = (event) => {
    if (![...seenKinds.options].some((o) => o.value === event.kind)) seenKinds.append(el("option", { value: String(event.kind) }));
    kept.push(event);
    if (kept.length > KEPT) kept.shift();
    if (paused()) { held += 1; status.textContent = `paused · ${held} new events held`; return; }
    if (matches(event)) {
      rows.prepend(row(event));
      while (rows.children.length > 200) rows.lastChild.remove();
    }
  };
  const said = {
    connecting: () => "connecting…",
    open: (after) => (after === null ? "connected" : `connected · resumed after event ${after}`),
    lost: ({ wait, why }) => `connection lost (${why}) · reconnecting in ${Math.ceil(wait / 1000)} s, resuming from the last event`,
    stopped: () => "stopped",
  };
  const stop = follow("/v1/events", {
    onEvent: take,
    onState: (state, detail) => { if (!paused()) status.textContent = said[state](detail); },
  });
  life.onLeave(stop);
}

// -- Calls & tasks -----------------------------------------------------------------

function logTable(calls, detail) {
  const rows = el("tbody");
  for (const c of calls) { // newest first, as /v1/log gives them
    const show = () => clear(detail).append(el("h4", {}, `call ${c.id}`), el("dl", {},
      ["ts", "server", "tool", "method", "outcome", "ms", "queue_ms", "upstream_ms", "door", "caller", "transport", "trace_id", "host_revision", "upstream_revision", "error"]
        .flatMap((k) => [el("dt", {}, k), el("dd", {}, k === "ts" ? new Date(c.ts * 1000).toLocaleString() : c[k] === null || c[k] === undefined ? "—" : typeof c[k] === "object" ? JSON.stringify(c[k]) : String(c[k]))])),
      jsonBlock(c, "the whole entry"));
    rows.append(el("tr", { class: c.outcome === "ok" ? "" : "is-error" },
      el("td", {}, el("button", { type: "button", class: "link", onclick: show, "aria-label": `details of call ${c.id}` }, String(c.id))),
      el("td", {}, when(c.ts)), el("td", {}, String(c.server ?? "")), el("td", {}, String(c.tool ?? c.method ?? "")),
      el("td", {}, String(c.outcome ?? "")), el("td", {}, typeof c.ms === "number" ? c.ms.toFixed(1) : ""), el("td", {}, String(c.door ?? ""))));
  }
  return el("div", { class: "scroll" }, el("table", {},
    el("thead", {}, el("tr", {}, ["#", "Time", "Server", "Tool", "Outcome", "ms", "From"].map((h) => el("th", { scope: "col" }, h)))), rows));
}

function tasksTable(tasks, refresh, out) {
  const rows = el("tbody");
  const final = new Set(["completed", "failed", "cancelled"]);
  for (const t of tasks) {
    const result = async () => {
      const { status, body } = await api("GET", `/v1/tasks/${encodeURIComponent(t.id)}/result`);
      clear(out).append(el("h4", {}, `task ${t.id}`), renderResult(status, body));
    };
    const cancel = async () => {
      const { status, body } = await api("POST", `/v1/tasks/${encodeURIComponent(t.id)}/cancel`);
      clear(out).append(status === 200 ? el("p", {}, `task ${t.id} cancelled`) : el("p", { class: "error", role: "alert" }, errorText(body)));
      refresh();
    };
    rows.append(el("tr", { class: `status-${t.status}` },
      el("td", {}, el("code", {}, t.id)), el("td", {}, String(t.server ?? "")), el("td", {}, String(t.what ?? "")),
      el("td", {}, String(t.status), t.statusMessage ? ` — ${t.statusMessage}` : ""), el("td", {}, when(t.created)),
      el("td", {}, final.has(t.status) ? el("button", { type: "button", onclick: result }, "Result")
        : el("button", { type: "button", onclick: cancel, "aria-label": `cancel task ${t.id}` }, "Cancel"))));
  }
  if (!tasks.length) rows.append(el("tr", {}, el("td", { colspan: 6 }, "No tasks.")));
  return el("div", { class: "scroll" }, el("table", {},
    el("thead", {}, el("tr", {}, ["Task", "Server", "What", "Status", "Created", ""].map((h) => el("th", { scope: "col" }, h)))), rows));
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  Object.entries(attrs).forEach(([k, v]) => node.setAttribute(k, String(v)));
  if (text !== undefined) node.textContent = text;
  return node;
}

// Latency percentiles and error rates per tool as bars (one SVG, scaled to the worst p99).
function statsChart(stats) {
  const tools = stats.tools || [];
  if (!tools.length) return el("p", { class: "help" }, "No calls yet.");
  const worst = Math.max(...tools.map((t) => t.p99 || 0), 1);
  const line = 18, width = 640, left = 200, barWidth = width - left - 90;
  const height = tools.length * line * 4 + 10;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart", "aria-label": "latency percentiles and error rate per tool" });
  tools.forEach((t, i) => {
    const top = i * line * 4 + 4;
    chart.append(svg("text", { x: 0, y: top + 12, class: "name" }, `${t.server}/${t.tool}`));
    const rate = t.calls ? t.errors / t.calls : 0;
    chart.append(svg("text", { x: 0, y: top + 12 + line, class: "note" }, `${t.calls} call${t.calls === 1 ? "" : "s"}, ${(rate * 100).toFixed(0)}% errors`));
    ["p50", "p95", "p99"].forEach((p, j) => {
      const y = top + j * line;
      const w = Math.max(1, ((t[p] || 0) / worst) * barWidth);
      chart.append(svg("rect", { x: left, y, width: w, height: line - 4, class: `bar ${p}` }));
      chart.append(svg("text", { x: left + w + 4, y: y + 11, class: "note" }, `${p} ${(t[p] || 0).toFixed(1)} ms`));
    });
    chart.append(svg("rect", { x: left, y: top + 3 * line, width: Math.max(1, rate * barWidth), height: line - 4, class: "bar errors" }));
    chart.append(svg("text", { x: left + Math.max(1, rate * barWidth) + 4, y: top + 3 * line + 11, class: "note" }, `errors ${(rate * 100).toFixed(0)}%`));
  });
  const table = el("table", { class: "visually-hidden" }, el("caption", {}, "The same figures"),
    el("tr", {}, ["Tool", "Calls", "Errors", "p50 ms", "p95 ms", "p99 ms"].map((h) => el("th", { scope: "col" }, h))),
    tools.map((t) => el("tr", {}, [`${t.server}/${t.tool}`, t.calls, t.errors, t.p50, t.p95, t.p99].map((v) => el("td", {}, String(v))))));
  return el("div", {}, chart, table);
}

export function callsPage(main, life) {
  const server = el("input", { id: uid("server"), type: "search" });
  const tool = el("input", { id: uid("tool"), type: "search" });
  const since = el("input", { id: uid("since"), type: "text", placeholder: "1h, 30m, 2026-01-31T12:00" });
  const errors = el("input", { id: uid("errors"), type: "checkbox" });
  const note = el("p", { class: "help", role: "status" });
  const log = el("div"), detail = el("div", { class: "detail", "aria-live": "polite" });
  const tasks = el("div"), taskOut = el("div", { class: "detail", "aria-live": "polite" });
  const stats = el("div");
  const refresh = async (event) => {
    event?.preventDefault();
    const query = new URLSearchParams({ limit: "200" });
    if (server.value.trim()) query.set("server", server.value.trim());
    if (tool.value.trim()) query.set("tool", tool.value.trim());
    if (since.value.trim()) query.set("since", since.value.trim());
    if (errors.checked) query.set("errors", "true");
    const [l, t, s] = await Promise.all([api("GET", `/v1/log?${query}`), api("GET", "/v1/tasks"),
      api("GET", `/v1/stats${since.value.trim() ? `?since=${encodeURIComponent(since.value.trim())}` : ""}`)]);
    note.textContent = l.status === 200 ? `${l.body.calls.length} calls shown · updated ${new Date().toLocaleTimeString()}` : errorText(l.body);
    if (l.status === 200) clear(log).append(logTable(l.body.calls, detail));
    if (t.status === 200) clear(tasks).append(tasksTable(t.body.tasks, refresh, taskOut));
    if (s.status === 200) clear(stats).append(statsChart(s.body));
  };
  main.append(
    el("form", { class: "row", onsubmit: refresh, "aria-label": "filter the call log" },
      labelled("Server", server), labelled("Tool", tool), labelled("Since", since),
      el("span", { class: "control" }, errors, el("label", { for: errors.id }, "Errors only")),
      el("button", { type: "submit" }, "Filter")),
    note, el("h3", {}, "Call log"), log, detail, el("h3", {}, "Tasks"), tasks, taskOut,
    el("h3", {}, "Latency and errors per tool"), stats);
  life.every(3000, refresh);
}
