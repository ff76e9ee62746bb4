/**
 * `req.handleFormRequest({ found, get, store })`, the reference's way for a microservice to read
 * a multipart/form-data request: for each part, `found(key, filename)` decides `{ action:
 * "store", path }` (the file goes into the container's storage and `store(path, size)` hears it),
 * `{ action: "get" }` (`get(key, value)` hears the value as text) or `{ action: "skip" }`. As in
 * the reference's engine it runs synchronously: the body is already read (at most
 * `mcm.maxRequestBodyBytes`).
 *
 * @module
 */

/** One part of a multipart body. */
export interface FormPart {
  name: string;
  filename: string | undefined;
  bytes: Uint8Array;
}

/** The callbacks a microservice passes. */
export interface FormHandlers {
  found?: (key: string, filename: string | undefined) => { action?: string; path?: string } | void;
  get?: (key: string, value: string) => void;
  store?: (path: string, size: number) => void;
}

const CRLF_CRLF = [13, 10, 13, 10];

function indexOf(haystack: Uint8Array, needle: Uint8Array | number[], from: number): number {
  const first = needle[0];
  for (let i = haystack.indexOf(first, from); i !== -1; i = haystack.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

function parameter(header: string, name: string): string | undefined {
  const match = new RegExp(`;\\s*${name}="((?:[^"\\\\]|\\\\.)*)"`, "i").exec(header) ??
    new RegExp(`;\\s*${name}=([^;\\s]+)`, "i").exec(header);
  return match?.[1].replace(/\\(.)/g, "$1");
}

/** The parts of a multipart/form-data body; throws TypeError when it is not one. */
export function formParts(contentType: string, body: Uint8Array): FormPart[] {
  const boundary = /multipart\/form-data/i.test(contentType)
    ? parameter(contentType, "boundary")
    : undefined;
  if (!boundary) throw new TypeError("handleFormRequest: the request is not multipart/form-data");
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const delimiter = encoder.encode(`--${boundary}`);
  const next = encoder.encode(`\r\n--${boundary}`);
  const parts: FormPart[] = [];
  let at = indexOf(body, delimiter, 0);
  if (at === -1) throw new TypeError("handleFormRequest: no part in the body");
  at += delimiter.length;
  // After a delimiter: "--" ends the body, CRLF starts a part.
  while (body[at] !== 45 || body[at + 1] !== 45) {
    const headersEnd = indexOf(body, CRLF_CRLF, at);
    if (headersEnd === -1) throw new TypeError("handleFormRequest: a part has no end of headers");
    const headers = decoder.decode(body.subarray(at + 2, headersEnd));
    const end = indexOf(body, next, headersEnd + 4);
    if (end === -1) throw new TypeError("handleFormRequest: the body ends inside a part");
    const disposition = headers.split("\r\n")
      .find((line) => /^content-disposition:/i.test(line)) ?? "";
    parts.push({
      name: parameter(disposition, "name") ?? "",
      filename: parameter(disposition, "filename"),
      bytes: body.subarray(headersEnd + 4, end),
    });
    at = end + next.length;
  }
  return parts;
}

/** Runs the reference's handleFormRequest over `parts`; `save` stores a file. */
export function handleForm(
  parts: FormPart[],
  handlers: FormHandlers,
  save: (path: string, bytes: Uint8Array) => void,
): void {
  const decoder = new TextDecoder();
  for (const part of parts) {
    const decision = handlers.found?.(part.name, part.filename) ??
      { action: part.filename === undefined ? "get" : "skip" };
    if (decision.action === "store" && decision.path !== undefined) {
      const path = String(decision.path);
      save(path, part.bytes);
      handlers.store?.(path, part.bytes.length);
    } else if (decision.action === "get") {
      handlers.get?.(part.name, decoder.decode(part.bytes));
    }
  }
}
