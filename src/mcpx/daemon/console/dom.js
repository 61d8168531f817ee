// DOM and /v1 helpers. Every string from the daemon or an upstream becomes a text node:
// nothing here ever parses data as HTML.

const TOKEN = document.querySelector('meta[name="mcpx-console-token"]').content;
export const NDJSON = "application/x-ndjson";

// el("p", {class: "x", for: "id"}, "text", child, ...): attributes are set one by one
// (an "on*" key adds a listener), children are nodes or text.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else if (key === "value" || key === "checked" || key === "selected") {
      node[key] = value;
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

// Pretty JSON as text, folded under a summary.
export function jsonBlock(value, summary = "JSON", open = false) {
  return el("details", { class: "json", open }, el("summary", {}, summary),
    el("pre", {}, JSON.stringify(value, null, 2)));
}

export function when(ts) {
  return typeof ts === "number" ? new Date(ts * 1000).toLocaleTimeString() : "";
}

export function seconds(s) {
  if (typeof s !== "number") return "";
  if (s < 90) return `${s.toFixed(1)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

let ids = 0;
export function uid(prefix) {
  ids += 1;
  return `${prefix}-${ids}`;
}

// One /v1 request. A request that changes state carries the console's form token (the
// daemon refuses a browser's without it). Answers {status, body}; body is parsed JSON
// when the answer is JSON.
export async function api(method, path, body, headers = {}) {
  const init = { method, headers: { Accept: "application/json", ...headers } };
  if (method !== "GET") init.headers["X-Mcpx-Console-Token"] = TOKEN;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  return { status: response.status, body: await parsed(response), response };
}

async function parsed(response) {
  const text = await response.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return { error: { code: "not_json", message: text.slice(0, 500) } };
  }
}

// A /v1 call whose progress comes as ndjson lines: onNote(notification) for each,
// then {status, body} of the answer (its "status" key when the stream had begun).
export async function streamedCall(body, onNote) {
  const headers = {
    Accept: `application/json, ${NDJSON}`,
    "Content-Type": "application/json",
    "X-Mcpx-Console-Token": TOKEN,
  };
  const response = await fetch("/v1/call", { method: "POST", headers, body: JSON.stringify(body) });
  if (!(response.headers.get("content-type") || "").startsWith(NDJSON)) {
    return { status: response.status, body: await parsed(response) };
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let last = null;
  const take = (line) => {
    if (!line.trim()) return;
    const item = JSON.parse(line);
    if (item && item.notification && Object.keys(item).length === 1) onNote(item.notification);
    else last = item;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n")) >= 0) {
      take(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 1);
    }
  }
  take(buffer);
  if (last === null) return { status: 502, body: { error: { code: "ended", message: "the answer ended before its result" } } };
  const status = typeof last.status === "number" ? last.status : 200;
  return { status, body: last };
}

export function errorText(body) {
  const error = body && body.error;
  if (!error) return "unexpected answer";
  return `${error.message || error.code || "error"}`;
}

// A safe link: only http(s) URLs become href; anything else is shown as text.
export function link(url, text) {
  let parsedUrl = null;
  try {
    parsedUrl = new URL(url);
  } catch {
    parsedUrl = null;
  }
  if (parsedUrl && (parsedUrl.protocol === "http:" || parsedUrl.protocol === "https:")) {
    return el("a", { href: parsedUrl.href, target: "_blank", rel: "noopener noreferrer" }, text || url);
  }
  return el("code", {}, text || String(url));
}
