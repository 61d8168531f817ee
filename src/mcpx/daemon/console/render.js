// A tool result (or a question's messages) rendered by content type. Upstream data is
// untrusted: text goes in as text, images and audio only as data: URLs of their own
// image/* or audio/* type, links only when http(s).

import { append, el, jsonBlock, link } from "./dom.js";

const IMAGE = /^image\/[A-Za-z0-9.+-]+$/;
const AUDIO = /^audio\/[A-Za-z0-9.+-]+$/;
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;

function dataUrl(mime, data, pattern) {
  if (typeof mime !== "string" || !pattern.test(mime)) return null;
  if (typeof data !== "string" || !BASE64.test(data)) return null;
  return `data:${mime};base64,${data.replace(/\s/g, "")}`;
}

function textBlock(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return jsonBlock(JSON.parse(trimmed), "JSON text", true);
    } catch {
      // plain text after all
    }
  }
  return el("pre", { class: "text" }, text);
}

// A blob the page will not show, offered as a download: typed application/octet-stream
// whatever the upstream said, so the browser saves it and never renders it here.
function download(res) {
  const bytes = Uint8Array.from(atob(res.blob.replace(/\s/g, "")), (c) => c.charCodeAt(0));
  const href = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
  const name = (String(res.uri ?? "").split(/[/?#]/).filter(Boolean).pop() || "resource").replace(/[^A-Za-z0-9._-]/g, "_");
  return el("p", {}, `${bytes.length} bytes of ${res.mimeType || "data"} · `,
    el("a", { href, download: name, class: "download" }, `Download ${name}`));
}

// One resource's contents (a read's, or an embedded resource's): text (JSON folded),
// an image or audio of its own type, else a blob's size and a download.
export function resourceContents(res, label = "Resource") {
  const head = el("p", { class: "meta" }, `${label} `, el("code", {}, String(res.uri ?? "")),
    res.mimeType ? ` (${res.mimeType})` : "");
  const box = el("div", { class: "content resource" }, head);
  if (typeof res.text === "string") return append(box, [textBlock(res.text)]);
  const image = dataUrl(res.mimeType, res.blob, IMAGE);
  if (image) return append(box, [el("img", { src: image, alt: `resource ${res.uri ?? ""}` })]);
  const audio = dataUrl(res.mimeType, res.blob, AUDIO);
  if (audio) return append(box, [el("audio", { controls: true, src: audio, "aria-label": `audio ${res.uri ?? ""}` })]);
  if (typeof res.blob === "string" && BASE64.test(res.blob)) {
    try {
      return append(box, [download(res)]);
    } catch {
      // not base64 after all: said below
    }
  }
  return append(box, [el("p", { class: "error" }, typeof res.blob === "string" ? "a blob that is not base64" : "no content")]);
}

export function contentItem(item) {
  if (!item || typeof item !== "object") return jsonBlock(item, "content");
  switch (item.type) {
    case "text":
      return el("div", { class: "content text" }, textBlock(String(item.text ?? "")));
    case "image": {
      const src = dataUrl(item.mimeType, item.data, IMAGE);
      return src
        ? el("div", { class: "content image" }, el("img", { src, alt: `image (${item.mimeType})` }))
        : el("p", { class: "error" }, `an image of type ${String(item.mimeType)} that cannot be shown`);
    }
    case "audio": {
      const src = dataUrl(item.mimeType, item.data, AUDIO);
      return src
        ? el("div", { class: "content audio" }, el("audio", { controls: true, src, "aria-label": `audio (${item.mimeType})` }))
        : el("p", { class: "error" }, `audio of type ${String(item.mimeType)} that cannot be played`);
    }
    case "resource_link":
      return el("div", { class: "content link" }, "Resource link: ", link(String(item.uri ?? ""), item.title || item.name || item.uri),
        item.description ? el("p", { class: "help" }, String(item.description)) : null,
        item.uri ? el("p", { class: "meta" }, el("code", {}, String(item.uri))) : null);
    case "resource":
      return resourceContents(item.resource || {}, "Embedded resource");
    default:
      return jsonBlock(item, `content of type ${String(item.type)}`, true);
  }
}

// A CallToolResult (or any /v1 answer) as nodes.
export function renderResult(status, body) {
  if (body && body.error && !Array.isArray(body.content)) {
    return el("div", { class: "result is-error", role: "alert" },
      el("p", {}, el("strong", {}, `Refused (${status}, ${body.error.code}): `), String(body.error.message ?? "")),
      body.error.details ? jsonBlock(body.error.details, "details") : null);
  }
  if (!body || !Array.isArray(body.content)) {
    return el("div", { class: "result" }, jsonBlock(body, "answer", true));
  }
  const box = el("div", { class: body.isError ? "result is-error" : "result", role: body.isError ? "alert" : null });
  if (body.isError) box.append(el("p", {}, el("strong", {}, "The tool reported an error")));
  body.content.forEach((item) => box.append(contentItem(item)));
  if (!body.content.length) box.append(el("p", { class: "help" }, "(no content)"));
  if (body.structuredContent !== undefined) box.append(jsonBlock(body.structuredContent, "structuredContent"));
  box.append(jsonBlock(body, "whole answer"));
  return box;
}

// A sampling question's messages: role and content, as a tool result's content is.
export function renderMessages(params) {
  const list = el("ol", { class: "messages" });
  for (const message of params.messages || []) {
    const parts = Array.isArray(message.content) ? message.content : [message.content];
    list.append(el("li", {}, el("strong", {}, `${String(message.role ?? "?")}: `), parts.map(contentItem)));
  }
  return el("div", {},
    params.systemPrompt ? el("p", {}, el("strong", {}, "System prompt: "), String(params.systemPrompt)) : null,
    list,
    params.maxTokens ? el("p", { class: "help" }, `at most ${params.maxTokens} tokens`) : null);
}
