/**
 * A container's `res` messages (a response's head: one per request), checked by hand: the
 * generic check (valibot's, through src/tunnel/messages.ts's parseMessage) cost a routed request
 * about 4% of the node's CPU time. `plainResponse` accepts only what ResponseMessageSchema
 * (spec/hub.yaml) accepts; anything else, valid or not, takes the generic check, which then
 * says what is wrong (response_check_test.ts holds the two to the same answers).
 *
 * @module
 */
import type { ResponseMessage } from "../../../gen/hub/validators.ts";

/** ResponseMessage's limits (spec/hub.yaml: ResponseMessage, HeaderList). */
const MAX_HEADERS = 256;
const MAX_HEADER_CHARS = 16384;
const MAX_INLINE_CHARS = 87384;

const KEYS = new Set(["t", "s", "status", "headers", "body", "inline"]);

const isCount = (value: unknown, min: number, max = Number.MAX_SAFE_INTEGER) =>
  Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;

/** Whether `message` (parsed JSON) is a `res` message ResponseMessageSchema accepts. */
export function plainResponse(message: unknown): message is ResponseMessage {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return false;
  const m = message as Record<string, unknown>;
  for (const key in m) if (!KEYS.has(key)) return false;
  if (m.t !== "res" || !isCount(m.s, 1) || !isCount(m.status, 100, 599)) return false;
  if (typeof m.body !== "boolean") return false;
  if ("inline" in m && (typeof m.inline !== "string" || m.inline.length > MAX_INLINE_CHARS)) {
    return false;
  }
  const headers = m.headers;
  if (!Array.isArray(headers) || headers.length > MAX_HEADERS) return false;
  for (const header of headers) {
    if (!Array.isArray(header) || header.length !== 2) return false;
    const [name, value] = header;
    if (typeof name !== "string" || name.length > MAX_HEADER_CHARS) return false;
    if (typeof value !== "string" || value.length > MAX_HEADER_CHARS) return false;
  }
  return true;
}
