// The Prompts and Resources pages: browsed as Tools are (a list filtered by words and
// server, one item's detail beside it). A prompt's arguments and a resource template's
// URI variables become forms; what Get or Read answers is rendered by content type
// (render.js): upstream text only ever as text.

import { api, clear, el, errorText, jsonBlock, uid } from "./dom.js";
import { schemaForm } from "./forms.js";
import { renderMessages, renderResult, resourceContents } from "./render.js";

// The list, filters and detail pane both pages share. load(server) answers
// {items, errors} or {error}; entry(item) is the list's button text; view(item) the detail.
function browser(main, { noun, load, entry, words, view }) {
  const boxId = uid("filter");
  const serverId = uid("server");
  const box = el("input", { id: boxId, type: "search", placeholder: "words in a name or description" });
  const server = el("select", { id: serverId }, el("option", { value: "" }, "every server"));
  const status = el("p", { class: "help", role: "status" }, "loading…");
  const list = el("ul", { class: "tool-list" });
  const detail = el("div", { class: "tool-detail" });
  let items = [];
  const draw = () => {
    const wanted = box.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const shown = items.filter((item) => wanted.every((w) => words(item).toLowerCase().includes(w)));
    clear(list);
    for (const item of shown) {
      list.append(el("li", {}, el("button", { type: "button", class: "link", onclick: () => clear(detail).append(view(item)) },
        el("span", { class: "tool-name" }, entry(item)), item.title ? ` — ${item.title}` : ""),
        el("p", { class: "help" }, String(item.description ?? "").slice(0, 200))));
    }
    return shown.length;
  };
  let asked = 0;
  const refresh = async () => {
    asked += 1;
    const mine = asked;
    const answer = await load(server.value);
    if (mine !== asked) return; // a later choice was made meanwhile: its answer counts
    if (answer.error) { items = []; draw(); status.textContent = answer.error; return; }
    items = answer.items;
    const known = new Set([...server.options].map((o) => o.value));
    [...new Set(items.map((i) => i.server))].filter((s) => !known.has(s)).sort()
      .forEach((s) => server.append(el("option", { value: s }, s)));
    const failed = Object.keys(answer.errors || {});
    const count = draw();
    status.textContent = `${count} of ${items.length} ${noun}${failed.length ? ` · could not list: ${failed.join(", ")}` : ""}`;
  };
  box.addEventListener("input", () => {
    const count = draw();
    status.textContent = `${count} of ${items.length} ${noun}`;
  });
  server.addEventListener("change", refresh);
  main.append(el("form", { role: "search", class: "row", onsubmit: (e) => e.preventDefault() },
    el("span", { class: "control" }, el("label", { for: boxId }, `Filter ${noun}`), box),
    el("span", { class: "control" }, el("label", { for: serverId }, "Server"), server)),
  status, el("div", { class: "split" }, list, detail));
  refresh();
}

async function listed(path, key, server) {
  const query = server ? `?server=${encodeURIComponent(server)}` : "";
  const { status, body } = await api("GET", `${path}${query}`);
  return status === 200 ? { items: body[key], errors: body.errors } : { error: errorText(body) };
}

// A 400 names the field it refused (details.field "arguments.x" or "x").
function refusal(form, body) {
  const error = (body && body.error) || {};
  const field = String((error.details || {}).field || "").replace(/^arguments\./, "");
  form.showError(field || null, error.message || "refused");
}

// -- Prompts -----------------------------------------------------------------------

// A prompt's arguments as a schema: each a string, required when the prompt says so.
function argumentSchema(prompt) {
  const properties = {};
  const required = [];
  for (const arg of prompt.arguments || []) {
    if (!arg || typeof arg.name !== "string") continue;
    properties[arg.name] = { type: "string", title: arg.title || arg.name, description: arg.description || "" };
    if (arg.required) required.push(arg.name);
  }
  return { type: "object", properties, required };
}

function promptView(prompt) {
  const form = schemaForm(argumentSchema(prompt), "prompt");
  const button = el("button", { type: "submit" }, "Get");
  const out = el("div", { class: "result-slot", "aria-live": "polite" });
  const submit = async (event) => {
    event.preventDefault();
    const read = form.read();
    if (read.errors) return;
    button.disabled = true;
    clear(out);
    try {
      const { status, body } = await api("POST", "/v1/prompts/get", { server: prompt.server, name: prompt.name, arguments: read.value });
      if (status !== 200) {
        if (status === 400) refusal(form, body);
        out.append(renderResult(status, body));
        return;
      }
      out.append(el("div", { class: "result" },
        body.description ? el("p", {}, String(body.description)) : null,
        renderMessages({ messages: body.messages || [] }), jsonBlock(body, "whole answer")));
    } finally {
      button.disabled = false;
    }
  };
  return el("section", { class: "tool prompt", "aria-label": `${prompt.server}/${prompt.name}` },
    el("h3", {}, `${prompt.server} / ${prompt.name}`),
    prompt.title ? el("p", {}, el("strong", {}, String(prompt.title))) : null,
    el("p", { class: "description" }, String(prompt.description ?? "(no description)")),
    el("form", { novalidate: true, onsubmit: submit, "aria-label": `get ${prompt.name}` }, form.node, button), out);
}

export function promptsPage(main) {
  main.append(el("p", { class: "help" }, "Each server's prompts: fill in a prompt's arguments and get the messages it makes."));
  browser(main, {
    noun: "prompts",
    load: (server) => listed("/v1/prompts", "prompts", server),
    entry: (p) => `${p.server}/${p.name}`,
    words: (p) => `${p.server} ${p.name} ${p.title ?? ""} ${p.description ?? ""}`,
    view: promptView,
  });
}

// -- Resources ---------------------------------------------------------------------

async function read(server, uri, out) {
  clear(out).append(el("p", { class: "help", role: "status" }, `reading ${uri}…`));
  const { status, body } = await api("POST", "/v1/resources/read", { server, uri });
  clear(out);
  if (status !== 200 || !body || !Array.isArray(body.contents)) {
    out.append(renderResult(status, body));
    return status === 400 ? body : null;
  }
  const box = el("div", { class: "result" });
  body.contents.forEach((res) => box.append(resourceContents(res)));
  if (!body.contents.length) box.append(el("p", { class: "help" }, "(no contents)"));
  out.append(box);
  return null;
}

function resourceView(res) {
  const out = el("div", { class: "result-slot", "aria-live": "polite" });
  return el("section", { class: "tool resource", "aria-label": `${res.server} ${res.uri}` },
    el("h3", {}, `${res.server} / ${res.name ?? res.uri}`),
    res.title ? el("p", {}, el("strong", {}, String(res.title))) : null,
    el("p", { class: "meta" }, el("code", {}, String(res.uri)), res.mimeType ? ` (${res.mimeType})` : "",
      typeof res.size === "number" ? ` · ${res.size} bytes` : ""),
    el("p", { class: "description" }, String(res.description ?? "(no description)")),
    el("button", { type: "button", onclick: () => read(res.server, res.uri, out) }, "Read"), out);
}

// RFC 6570, the forms a template names resources with: {var}, {+var}, {#var}, and the
// operators that join several ({/a,b} {?a,b} …). Names come from the template, values
// from the form; reserved characters are kept only where the operator allows them.
const EXPRESSION = /\{([+#./;?&]?)([^}]*)\}/g;
const JOINS = { "": [",", ""], "+": [",", ""], "#": [",", "#"], ".": [".", "."], "/": ["/", "/"], ";": [";", ";"], "?": ["&", "?"], "&": ["&", "&"] };

function variables(template) {
  const names = [];
  for (const [, , list] of template.matchAll(EXPRESSION)) {
    list.split(",").map((v) => v.replace(/[*]$|:\d+$/, "").trim()).filter(Boolean)
      .forEach((v) => { if (!names.includes(v)) names.push(v); });
  }
  return names;
}

export function expand(template, values) {
  return template.replace(EXPRESSION, (_, op, list) => {
    const [sep, first] = JOINS[op];
    const keep = op === "+" || op === "#";
    const code = (v) => (keep ? encodeURI(v) : encodeURIComponent(v));
    const parts = list.split(",").map((v) => v.replace(/[*]$|:\d+$/, "").trim())
      .filter((name) => values[name] !== undefined && values[name] !== "")
      .map((name) => (op === "?" || op === "&" || op === ";" ? `${name}=${code(values[name])}` : code(values[name])));
    return parts.length ? first + parts.join(sep) : "";
  });
}

// Completions for a variable, as /v1/complete gives them, offered as a datalist.
function completing(template, form) {
  for (const [name, field] of form.fields) {
    const listId = uid("values");
    const options = el("datalist", { id: listId });
    field.input.setAttribute("list", listId);
    field.wrap.append(options);
    let asked = 0;
    field.input.addEventListener("input", async () => {
      asked += 1;
      const mine = asked;
      const argument = { name, value: field.input.value };
      const { status, body } = await api("POST", "/v1/complete", { server: template.server, ref: { type: "ref/resource", uri: template.uriTemplate }, argument });
      if (mine !== asked || status !== 200) return;
      clear(options).append(...((body.completion || {}).values || []).slice(0, 50).map((v) => el("option", { value: String(v) })));
    });
  }
}

function templateView(template) {
  const names = variables(String(template.uriTemplate ?? ""));
  const schema = { type: "object", properties: Object.fromEntries(names.map((n) => [n, { type: "string", title: n }])), required: names };
  const form = schemaForm(schema, "uri");
  completing(template, form);
  const preview = el("code", {}, String(template.uriTemplate));
  const out = el("div", { class: "result-slot", "aria-live": "polite" });
  const button = el("button", { type: "submit" }, "Read");
  const values = () => Object.fromEntries([...form.fields].map(([n, f]) => [n, f.input.value]));
  form.node.addEventListener("input", () => { preview.textContent = expand(String(template.uriTemplate), values()); });
  const submit = async (event) => {
    event.preventDefault();
    const given = form.read();
    if (given.errors) return;
    const missing = names.filter((n) => !given.value[n]);
    if (missing.length) { missing.forEach((n) => form.showError(n, "a value is needed to make the URI")); return; }
    button.disabled = true;
    try {
      const refused = await read(template.server, expand(String(template.uriTemplate), given.value), out);
      if (refused) refusal(form, refused);
    } finally {
      button.disabled = false;
    }
  };
  return el("section", { class: "tool template", "aria-label": `${template.server} ${template.uriTemplate}` },
    el("h3", {}, `${template.server} / ${template.name ?? template.uriTemplate}`),
    el("p", { class: "meta" }, "Template ", el("code", {}, String(template.uriTemplate)), template.mimeType ? ` (${template.mimeType})` : ""),
    el("p", { class: "description" }, String(template.description ?? "(no description)")),
    el("form", { novalidate: true, onsubmit: submit, "aria-label": `read from ${template.uriTemplate}` },
      form.node, el("p", { class: "help" }, "URI: ", preview), button), out);
}

export function resourcesPage(main) {
  main.append(el("p", { class: "help" }, "Each server's resources and resource templates: read one, or fill in a template's variables to read what it names."));
  browser(main, {
    noun: "resources and templates",
    load: async (server) => {
      const [plain, templates] = await Promise.all([listed("/v1/resources", "resources", server), listed("/v1/resources/templates", "resourceTemplates", server)]);
      if (plain.error || templates.error) return { error: plain.error || templates.error };
      return { items: [...plain.items, ...templates.items], errors: { ...plain.errors, ...templates.errors } };
    },
    entry: (r) => (r.uriTemplate ? `${r.server} ${r.uriTemplate}` : `${r.server} ${r.uri}`),
    words: (r) => `${r.server} ${r.name ?? ""} ${r.title ?? ""} ${r.uri ?? r.uriTemplate} ${r.description ?? ""}`,
    view: (r) => (r.uriTemplate ? templateView(r) : resourceView(r)),
  });
}
