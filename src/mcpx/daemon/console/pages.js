// The Servers, Tools and Questions pages.

import { api, clear, el, errorText, jsonBlock, link, seconds, streamedCall, uid } from "./dom.js";
import { schemaForm } from "./forms.js";
import { renderMessages, renderResult } from "./render.js";

// -- Servers -----------------------------------------------------------------------

// A start, stop or restart (POST /v1/servers/{server}/...; the api helper sends the form
// token). `instance`: one instance's id, else the server's (start: the console's own).
function lifecycle(server, what, instance) {
  const body = instance === undefined ? {} : { instance };
  return api("POST", `/v1/servers/${encodeURIComponent(server)}/${what}`, body);
}

// What a done action says: the instances stopped, then the one started.
function doneText(server, body) {
  const said = (body.stopped || []).map((i) => `stopped instance ${i.id}${i.pid ? ` (pid ${i.pid})` : ""}`);
  if (body.instance) {
    const i = body.instance;
    said.push(`instance ${i.id} ${i.state}${i.pid ? ` (pid ${i.pid})` : i.url ? ` (${i.url})` : ""}`);
  }
  return `${server}: ${said.length ? said.join(", ") : "no instance was running"}`;
}

// One labelled button per action; `key` finds it again after a redraw (focus is kept).
function actionButton(act, server, what, instance, label) {
  const key = `${what}:${server}:${instance ?? ""}`;
  const name = what[0].toUpperCase() + what.slice(1);
  return el("button", {
    type: "button", class: `action action-${what}`, "data-action": key, disabled: act.busy(server),
    "aria-label": label, onclick: () => act.run(server, what, instance),
  }, name);
}

function instanceRow(server, inst, act) {
  const where = inst.pid ? `pid ${inst.pid}` : inst.url ? String(inst.url) : "";
  const error = inst.lastError ? (typeof inst.lastError === "string" ? inst.lastError : JSON.stringify(inst.lastError)) : "";
  const which = `${server.name} instance ${inst.id}${inst.scope && inst.scope !== "shared" ? ` (${inst.scope})` : ""}`;
  return el("tr", { class: `state-${String(inst.state)}`, "data-instance": String(inst.id ?? "") },
    el("th", { scope: "row" }, server.name), el("td", {}, el("span", { class: "state" }, String(inst.state ?? ""))),
    el("td", {}, String(inst.era ?? "")), el("td", {}, String(inst.revision ?? "")), el("td", {}, where),
    el("td", {}, seconds(inst.uptime)), el("td", {}, String(inst.calls ?? "")), el("td", {}, String(inst.inFlight ?? "")),
    el("td", { class: "error" }, error),
    el("td", { class: "actions" }, actionButton(act, server.name, "restart", inst.id, `Restart ${which}`),
      actionButton(act, server.name, "stop", inst.id, `Stop ${which}`)));
}

function serverTable(servers, act) {
  const head = ["Server", "State", "Era", "Revision", "Process / URL", "Uptime", "Calls", "In flight", "Last error", "Actions"];
  const table = el("table", {}, el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h)))));
  for (const server of servers) {
    const body = el("tbody", { "data-server": server.name });
    const instances = server.instances || [];
    if (!instances.length) {
      body.append(el("tr", { class: "state-idle" }, el("th", { scope: "row" }, server.name),
        el("td", { colspan: 8 }, "not running: started on first use"),
        el("td", { class: "actions" }, actionButton(act, server.name, "start", undefined, `Start ${server.name}`))));
    }
    instances.forEach((inst) => body.append(instanceRow(server, inst, act)));
    // Scoped per identity (an instance per caller): the server's own actions beside them.
    if (instances.length && (server.scope === "identity" || instances.length > 1)) {
      body.append(el("tr", { class: "server-actions" }, el("td", { colspan: 9 }, `every instance of ${server.name}`),
        el("td", { class: "actions" },
          actionButton(act, server.name, "start", undefined, `Start ${server.name} (the console's own instance)`),
          actionButton(act, server.name, "restart", undefined, `Restart ${server.name} (the console's own instance)`),
          actionButton(act, server.name, "stop", undefined, `Stop every instance of ${server.name}`))));
    }
    table.append(body);
  }
  return el("div", { class: "scroll" }, table);
}

function serverDetails(servers) {
  return servers.map((s) => el("details", { class: "server" },
    el("summary", {}, `${s.name} (${s.transport}${s.scope ? `, ${s.scope}` : ""})`),
    el("p", {}, s.url ? link(String(s.url)) : el("code", {}, (s.command || []).join(" "))),
    s.description ? el("p", {}, String(s.description)) : null,
    jsonBlock(s, "everything /v1/servers says")));
}

export function serversPage(main, life) {
  const status = el("p", { class: "help", role: "status" });
  const outcome = el("p", { class: "outcome", role: "status", "aria-live": "polite" });
  const table = el("div");
  const details = el("div");
  const busy = new Set();
  let refresh = async () => {};
  const act = {
    busy: (server) => busy.has(server),
    async run(server, what, instance) {
      const from = document.activeElement?.dataset?.action;
      busy.add(server);
      table.querySelectorAll(`tbody[data-server="${CSS.escape(server)}"] button.action`).forEach((b) => { b.disabled = true; });
      outcome.className = "outcome";
      outcome.textContent = `${server}: ${what === "stop" ? "stopping" : what === "start" ? "starting" : "restarting"}…`;
      try {
        const { status: code, body } = await lifecycle(server, what, instance);
        outcome.className = code === 200 ? "outcome" : "outcome error";
        outcome.textContent = code === 200 ? doneText(server, body) : `${server}: ${what} failed: ${errorText(body)}`;
      } catch (exc) {
        outcome.className = "outcome error";
        outcome.textContent = `${server}: ${what} failed: ${exc.message}`;
      } finally {
        busy.delete(server);
        await refresh();
      }
      // Keyboard focus back where it was: that button, else the server's first (a
      // restarted instance has a new id, so new buttons).
      if (from) {
        const rows = table.querySelector(`tbody[data-server="${CSS.escape(server)}"]`);
        (table.querySelector(`[data-action="${CSS.escape(from)}"]`) || rows?.querySelector("button.action"))?.focus();
      }
    },
  };
  main.append(el("p", { class: "help" },
    "Each configured server and its instances, refreshed every 2 s. Start, Restart and Stop act on an ",
    "instance now (calls running on a stopped one fail, saying so); a stopped server starts again on its next call."),
    status, outcome, table, details);
  refresh = async () => {
    const { status: code, body } = await api("GET", "/v1/servers");
    if (code !== 200) {
      status.textContent = errorText(body);
      return;
    }
    status.textContent = `${body.servers.length} servers · updated ${new Date().toLocaleTimeString()}`;
    // Redrawn every time: the focused action button is found again by its key.
    const focused = document.activeElement?.dataset?.action;
    clear(table).append(serverTable(body.servers, act));
    if (focused) table.querySelector(`[data-action="${CSS.escape(focused)}"]`)?.focus();
    const open = new Set([...details.querySelectorAll("details[open] > summary")].map((s) => s.textContent));
    clear(details).append(...serverDetails(body.servers));
    details.querySelectorAll("details > summary").forEach((s) => { if (open.has(s.textContent)) s.parentElement.open = true; });
  };
  life.every(2000, () => refresh());
}

// -- Tools -------------------------------------------------------------------------

// Where the daemon's 400 points: details.field, or the property a "required" problem names.
function refusedField(error) {
  const details = error.details || {};
  if (details.field && details.field !== "(arguments)") return details.field;
  const problem = (details.problems || [error.message]).join(" ");
  const named = /'([^']+)' is a required property/.exec(problem);
  return named ? named[1] : null;
}

function progressView() {
  const bar = el("progress", { max: 1, "aria-label": "progress" });
  bar.removeAttribute("value");
  const message = el("p", { class: "help", role: "status" });
  const logs = el("ul", { class: "logs" });
  const node = el("div", { class: "progress", hidden: true }, bar, message, logs);
  let last = "";
  return {
    node,
    start() { node.hidden = false; bar.removeAttribute("value"); message.textContent = "calling…"; last = ""; clear(logs); },
    note(n) {
      const p = n.params || {};
      if (n.method === "notifications/progress") {
        if (typeof p.total === "number" && p.total > 0) { bar.max = p.total; bar.value = p.progress; }
        last = `progress ${p.progress}${p.total ? ` of ${p.total}` : ""}${p.message ? `: ${p.message}` : ""}`;
        message.textContent = last;
      } else if (n.method === "notifications/message") {
        logs.append(el("li", {}, `${p.level ?? "info"}: ${typeof p.data === "string" ? p.data : JSON.stringify(p.data)}`));
      }
    },
    // The last progress stays in view beside the outcome.
    done(text) {
      if (!last) { bar.max = 1; bar.value = 1; }
      message.textContent = last ? `${text} · last ${last}` : text;
    },
  };
}

function toolView(tool) {
  const form = schemaForm(tool.inputSchema || {}, "arg");
  const progress = progressView();
  const result = el("div", { class: "result-slot", "aria-live": "polite" });
  const button = el("button", { type: "submit" }, "Call");
  const submit = async (event) => {
    event.preventDefault();
    const read = form.read();
    if (read.errors) return;
    button.disabled = true;
    clear(result);
    progress.start();
    const started = performance.now();
    try {
      const { status, body } = await streamedCall({ server: tool.server, tool: tool.name, arguments: read.value }, progress.note);
      progress.done(`answered in ${((performance.now() - started) / 1000).toFixed(2)} s`);
      if (status === 400 && body.error && body.error.code === "invalid_input") {
        const problems = (body.error.details || {}).problems;
        form.showError(refusedField(body.error), Array.isArray(problems) && problems.length ? problems.join("; ") : body.error.message);
      }
      result.append(renderResult(status, body));
    } catch (exc) {
      progress.done("failed");
      result.append(el("p", { class: "error", role: "alert" }, `the call failed: ${exc.message}`));
    } finally {
      button.disabled = false;
    }
  };
  return el("section", { class: "tool", "aria-label": `${tool.server}/${tool.name}` },
    el("h3", {}, `${tool.server} / ${tool.name}`),
    tool.title ? el("p", {}, el("strong", {}, String(tool.title))) : null,
    el("p", { class: "description" }, String(tool.description ?? "(no description)")),
    jsonBlock(tool.inputSchema, "input schema"),
    tool.outputSchema ? jsonBlock(tool.outputSchema, "output schema") : null,
    el("form", { novalidate: true, onsubmit: submit, "aria-label": `call ${tool.name}` }, form.node, button),
    progress.node, result);
}

export function toolsPage(main, life) {
  const searchId = uid("search");
  const box = el("input", { id: searchId, type: "search", placeholder: "what do you want to do?", value: decodeURIComponent(location.hash.split("/")[1] || "") });
  const list = el("ul", { class: "tool-list" });
  const detail = el("div", { class: "tool-detail" });
  const status = el("p", { class: "help", role: "status" });
  const open = async (tool) => {
    const { status: code, body } = await api("GET", `/v1/tools/${encodeURIComponent(tool.server)}/${encodeURIComponent(tool.name)}`);
    clear(detail).append(code === 200 ? toolView(body) : el("p", { class: "error" }, errorText(body)));
    detail.querySelector("h3").scrollIntoView?.({ block: "nearest" });
  };
  let asked = 0;
  const search = async (event) => {
    event?.preventDefault();
    const query = new URLSearchParams();
    if (box.value.trim()) query.set("search", box.value.trim());
    asked += 1;
    const mine = asked;
    const { status: code, body } = await api("GET", `/v1/tools?${query}`);
    if (mine !== asked) return; // a later search was made meanwhile: its answer counts
    clear(list);
    if (code !== 200) { status.textContent = errorText(body); return; }
    const failed = Object.keys(body.errors || {});
    status.textContent = `${body.tools.length} ${body.tools.length === 1 ? "tool" : "tools"}${failed.length ? ` · could not list: ${failed.join(", ")}` : ""}`;
    for (const tool of body.tools) {
      list.append(el("li", {}, el("button", { type: "button", class: "link", onclick: () => open(tool) },
        el("span", { class: "tool-name" }, `${tool.server}/${tool.name}`), tool.title ? ` — ${tool.title}` : ""),
        el("p", { class: "help" }, String(tool.description ?? "").slice(0, 200))));
    }
  };
  main.append(el("form", { role: "search", onsubmit: search, class: "row" },
    el("label", { for: searchId }, "Search tools"), box, el("button", { type: "submit" }, "Search")),
    status, el("div", { class: "split" }, list, detail));
  search();
}

// -- Questions ---------------------------------------------------------------------

function answerBody(question, form, reply) {
  if (question.method === "sampling/createMessage") {
    return { content: { role: "assistant", content: { type: "text", text: reply.value }, model: "human" } };
  }
  if (question.method === "roots/list") {
    return { content: { roots: reply.value.split("\n").map((u) => u.trim()).filter(Boolean).map((uri) => ({ uri })) } };
  }
  if (form) {
    const read = form.read();
    return read.errors ? null : { content: read.value };
  }
  return { content: {} };
}

function questionCard(question, forget) {
  const p = question.params || {};
  const isUrl = question.method === "elicitation/create" && p.mode === "url";
  const form = question.method === "elicitation/create" && !isUrl ? schemaForm(p.requestedSchema || {}, `q${question.id}`) : null;
  const replyId = uid("reply");
  const reply = el("textarea", { id: replyId, rows: 3 });
  const outcome = el("p", { class: "error", role: "alert", hidden: true });
  const act = async (how) => {
    const body = how === "answer" ? answerBody(question, form, reply) : undefined;
    if (how === "answer" && body === null) return;
    const { status, body: answer } = await api("POST", `/v1/questions/${encodeURIComponent(question.id)}/${how}`, body);
    if (status === 200) { forget(question.id); return; }
    const err = answer && answer.error ? answer.error : {};
    const field = err.details && (err.details.field || err.details.property);
    if (form && status === 400) form.showError(field || null, err.message || "refused");
    outcome.textContent = `${err.code || status}: ${err.message || "refused"}`;
    outcome.hidden = false;
  };
  let body;
  if (isUrl) body = el("p", {}, "Open this page to answer: ", link(String(p.url ?? "")));
  else if (question.method === "sampling/createMessage") body = el("div", {}, renderMessages(p), el("label", { for: replyId }, "Your reply"), reply);
  else if (question.method === "roots/list") body = el("div", {}, el("label", { for: replyId }, "Root URIs, one per line"), reply);
  else body = form ? form.node : jsonBlock(p, "params", true);
  const buttons = el("div", { class: "row" },
    el("button", { type: "submit" }, isUrl ? "Done (accept)" : "Accept"),
    el("button", { type: "button", onclick: () => act("decline") }, "Decline"),
    el("button", { type: "button", onclick: () => act("cancel") }, "Cancel"));
  const left = el("span", { class: "help" });
  const card = el("article", { class: "question", "data-question": question.id, "aria-label": `question ${question.id}` },
    el("h3", {}, `${question.server ?? "?"} asks (${question.method})`),
    el("p", { class: "message" }, String(p.message ?? "")),
    el("p", { class: "help" }, `question ${question.id} · ${question.routing ?? ""} · `, left),
    el("form", { novalidate: true, onsubmit: (e) => { e.preventDefault(); act("answer"); } }, body, buttons), outcome);
  return { card, left };
}

export function questionsPage(main, life) {
  const status = el("p", { class: "help", role: "status" });
  const list = el("div", { class: "questions" });
  const shown = new Map();
  const forget = (id) => { shown.get(id)?.card.remove(); shown.delete(id); };
  main.append(el("p", { class: "help" }, "Questions upstreams asked that no host could answer, checked every second. Answered elsewhere, they go."), status, list);
  life.every(1000, async () => {
    const { status: code, body } = await api("GET", "/v1/questions");
    if (code !== 200) { status.textContent = errorText(body); return; }
    const ids = new Set(body.questions.map((q) => q.id));
    [...shown.keys()].filter((id) => !ids.has(id)).forEach(forget);
    for (const q of body.questions) {
      if (!shown.has(q.id)) {
        const made = questionCard(q, forget);
        shown.set(q.id, made);
        list.append(made.card);
      }
      shown.get(q.id).left.textContent = typeof q.timeLeft === "number" ? `${Math.round(q.timeLeft)} s left` : "";
    }
    status.textContent = body.questions.length ? `${body.questions.length} waiting` : "No question is waiting.";
  });
}
