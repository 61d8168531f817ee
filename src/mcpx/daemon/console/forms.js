// A form generated from a JSON Schema object (a tool's inputSchema, an elicitation's
// requestedSchema): one labelled control per property, required marks, defaults,
// and an error slot per field that read() and showError() fill.

import { el, uid } from "./dom.js";

// The choices a schema offers: enum (with enumNames), or oneOf/anyOf of {const, title}.
export function choices(schema) {
  if (!schema || typeof schema !== "object") return null;
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((value, i) => ({ value, title: names[i] ?? String(value) }));
  }
  const list = schema.oneOf || schema.anyOf;
  if (Array.isArray(list) && list.length && list.every((s) => s && "const" in s)) {
    return list.map((s) => ({ value: s.const, title: s.title ?? String(s.const) }));
  }
  return null;
}

function kindOf(schema) {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (choices(schema)) return "choice";
  if (type === "array") return choices(schema.items) ? "multi" : isPrimitive(schema.items) ? "lines" : "json";
  if (type === "string" || type === "number" || type === "integer" || type === "boolean") return type;
  return "json";
}

function isPrimitive(schema) {
  const type = schema && schema.type;
  return type === "string" || type === "number" || type === "integer";
}

const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

function control(kind, schema, id, described) {
  const base = { id, "aria-describedby": described };
  const given = schema.default;
  switch (kind) {
    case "boolean":
      return el("input", { ...base, type: "checkbox", checked: given === true });
    case "number":
    case "integer":
      return el("input", {
        ...base, type: "number", inputmode: kind === "integer" ? "numeric" : "decimal",
        step: kind === "integer" ? "1" : "any", min: schema.minimum, max: schema.maximum,
        value: given === undefined ? "" : String(given),
      });
    case "string":
      return el("input", {
        ...base, type: INPUT_TYPES[schema.format] || "text", minlength: schema.minLength,
        maxlength: schema.maxLength, value: given === undefined ? "" : String(given),
      });
    case "choice": {
      const select = el("select", base, el("option", { value: "" }, "—"));
      choices(schema).forEach((c, i) => select.append(el("option", { value: String(i), selected: c.value === given }, c.title)));
      return select;
    }
    case "multi": {
      const select = el("select", { ...base, multiple: true, size: Math.min(6, choices(schema.items).length) });
      const chosen = Array.isArray(given) ? given : [];
      choices(schema.items).forEach((c, i) => select.append(el("option", { value: String(i), selected: chosen.includes(c.value) }, c.title)));
      return select;
    }
    case "lines":
      return el("textarea", { ...base, rows: 3, value: Array.isArray(given) ? given.join("\n") : "" });
    default:
      return el("textarea", { ...base, rows: 4, class: "code", value: given === undefined ? "" : JSON.stringify(given, null, 2) });
  }
}

// Raises Error(message) for a value that is not of its field's kind.
function valueOf(kind, schema, node) {
  const text = node.value;
  switch (kind) {
    case "boolean":
      return node.checked;
    case "number":
    case "integer": {
      if (text.trim() === "") return undefined;
      const n = Number(text);
      if (!Number.isFinite(n)) throw new Error("is not a number");
      if (kind === "integer" && !Number.isInteger(n)) throw new Error("must be a whole number");
      return n;
    }
    case "string":
      return text === "" ? undefined : text;
    case "choice":
      return text === "" ? undefined : choices(schema)[Number(text)].value;
    case "multi":
      return [...node.selectedOptions].map((o) => choices(schema.items)[Number(o.value)].value);
    case "lines": {
      const lines = text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
      if (!lines.length) return undefined;
      const itemKind = schema.items.type;
      if (itemKind === "string") return lines;
      return lines.map((l) => {
        const n = Number(l);
        if (!Number.isFinite(n)) throw new Error(`${JSON.stringify(l)} is not a number`);
        return n;
      });
    }
    default:
      if (text.trim() === "") return undefined;
      try {
        return JSON.parse(text);
      } catch (exc) {
        throw new Error(`is not JSON: ${exc.message}`);
      }
  }
}

export function schemaForm(schema, prefix) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const fields = new Map();
  const node = el("div", { class: "schema-form" });
  const formError = el("p", { class: "error", role: "alert", hidden: true });
  for (const [name, prop] of Object.entries(props)) {
    const sub = prop && typeof prop === "object" ? prop : {};
    const kind = kindOf(sub);
    const id = uid(`${prefix}-${name.replace(/[^A-Za-z0-9_-]/g, "_")}`);
    const errorId = `${id}-error`;
    const helpId = `${id}-help`;
    const input = control(kind, sub, id, `${helpId} ${errorId}`);
    if (required.has(name)) input.setAttribute("aria-required", "true");
    const error = el("p", { class: "error", id: errorId, role: "alert", hidden: true });
    // The mark stays out of the label: the control's name is the field's own.
    const label = el("span", { class: "label-row" }, el("label", { for: id }, sub.title || name),
      required.has(name) ? el("span", { class: "required", "aria-hidden": "true", title: "required" }, " *") : null);
    const hint = kind === "lines" ? "one value per line" : kind === "json" ? "JSON" : kind === "multi" ? "choose any" : null;
    const help = el("p", { class: "help", id: helpId },
      sub.description || "", hint ? ` (${hint})` : "", sub.type ? ` [${Array.isArray(sub.type) ? sub.type.join("|") : sub.type}]` : "");
    const wrap = el("div", { class: `field field-${kind}`, "data-field": name }, label, input, help, error);
    fields.set(name, { kind, schema: sub, input, error, wrap });
    node.append(wrap);
  }
  if (!fields.size) node.append(el("p", { class: "help" }, "This takes no input."));
  node.append(formError);

  function showError(field, message) {
    const found = fields.get(field);
    const slot = found ? found.error : formError;
    slot.textContent = found ? message : field ? `${field}: ${message}` : message;
    slot.hidden = false;
    if (found) found.input.setAttribute("aria-invalid", "true");
  }

  function clearErrors() {
    for (const f of fields.values()) {
      f.error.hidden = true;
      f.error.textContent = "";
      f.input.removeAttribute("aria-invalid");
    }
    formError.hidden = true;
    formError.textContent = "";
  }

  // {value} or {errors: [[field, message]]}: only values that cannot be read at all
  // (a number that is none, JSON that is not) are caught here; the daemon judges the
  // rest against the schema and names the field (showError).
  function read() {
    clearErrors();
    const value = {};
    const errors = [];
    for (const [name, f] of fields) {
      try {
        const v = valueOf(f.kind, f.schema, f.input);
        if (v !== undefined) value[name] = v;
      } catch (exc) {
        errors.push([name, exc.message]);
      }
    }
    errors.forEach(([name, message]) => showError(name, message));
    return errors.length ? { errors } : { value };
  }

  return { node, read, showError, clearErrors, fields };
}
