/**
 * Reading and validating request input at the boundary: path and query parameters and JSON
 * bodies, with messages that name the field and say what to fix.
 *
 * @module
 */
import * as v from "valibot";
import { Invalid, TooLarge, UnsupportedType } from "../errors/mod.ts";

/** Where a value came from, for error messages. */
export type InputSource = "body" | "path" | "query";

/** Largest JSON body accepted, in bytes. */
export const MAX_JSON_BYTES = 64 * 1024;

function describeIssue(issue: v.BaseIssue<unknown>, source: InputSource): string {
  const keys = (issue.path ?? []).map((item) => String(item.key));
  const isObjectIssue = issue.type === "strict_object" || issue.type === "object" ||
    issue.type === "loose_object";
  let message = issue.message;
  if (isObjectIssue && issue.expected === "never") {
    const allowed = source === "body" ? "field" : `${source} parameter`;
    return `unknown ${allowed} '${keys.join(".")}'`;
  }
  if (isObjectIssue && issue.received === "undefined" && keys.length > 0) {
    message = "is required";
  } else if (isObjectIssue) {
    message = "must be a JSON object";
  }
  if (keys.length === 0) return `${source === "body" ? "body" : source}: ${message}`;
  const where = source === "body"
    ? `field '${keys.join(".")}'`
    : `${source} parameter '${keys[0]}'`;
  return `${where} ${message}`;
}

/** Validates a value against a schema; throws 400 naming every problem. */
export function validate<S extends v.GenericSchema>(
  schema: S,
  value: unknown,
  source: InputSource,
): v.InferOutput<S> {
  const result = v.safeParse(schema, value);
  if (result.success) return result.output;
  const messages = [...new Set(result.issues.map((issue) => describeIssue(issue, source)))];
  throw new Invalid(messages.join("; "));
}

/** Checks the Content-Type's media type against the accepted ones; 415 otherwise. */
export function requireContentType(request: Request, accepted: readonly string[]): string {
  const mediaType = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (!accepted.includes(mediaType)) {
    const got = mediaType ? `'${mediaType}'` : "none";
    throw new UnsupportedType(`Content-Type must be ${accepted.join(" or ")} (got ${got})`);
  }
  return mediaType;
}

/** Reads a body as text, refusing (413) one larger than `limit` bytes before or while reading. */
export async function readText(
  request: Request | Response,
  limit: number,
  what = "body",
): Promise<string> {
  const tooLarge = () => new TooLarge(`${what} is larger than ${limit} bytes`);
  const declared = request.headers.get("content-length");
  if (Number(declared ?? "0") > limit) throw tooLarge();
  // A request's body holds to its declared length (Deno's server, and the tunnel, which cuts a
  // longer one off), so within the limit it is read whole, on Deno's fast path (which touching
  // `request.body` first would leave). Not a fetch's answer: fetch inflates a compressed body
  // past its declared length (a small "br" answer can become gigabytes).
  if (
    request instanceof Request && declared !== null && /^\d+$/.test(declared) &&
    !request.headers.has("content-encoding")
  ) {
    return await request.text();
  }
  if (request.body === null) return "";
  // Without a length it is counted as it arrives. A reader rather than for-await: its iterator
  // costs more than a small body's read.
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    size += read.value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(read.value);
  }
  const decoder = new TextDecoder();
  if (chunks.length === 1) return decoder.decode(chunks[0]);
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return decoder.decode(bytes);
}

/**
 * Reads a JSON body of at most MAX_JSON_BYTES; 413 when larger, 400 when not JSON. The body is
 * JSON text under any of `contentTypes`, and without a Content-Type when `untyped`.
 */
export async function readJson(
  request: Request,
  contentTypes: readonly string[] = ["application/json"],
  untyped = false,
): Promise<unknown> {
  if (!(untyped && !request.headers.has("content-type"))) {
    requireContentType(request, contentTypes);
  }
  const text = await readText(request, MAX_JSON_BYTES, "JSON body");
  if (text.length === 0) throw new Invalid("request body is empty: send a JSON object");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Invalid(`body is not valid JSON: ${(error as Error).message}`);
  }
}
