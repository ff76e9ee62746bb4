/**
 * Reading JSON-RPC 2.0 envelopes strictly, before json-rpc-2.0 dispatches them (the library only
 * checks that `method` exists). Each request of a body, alone or in a batch, is either valid or
 * answered at once with the error JSON-RPC 2.0 names:
 * - not JSON: -32700 (one answer, even for text that starts like a batch);
 * - JSON that is not a request (`null`, `1`, `[]`, a member that is no object), `jsonrpc` other
 *   than "2.0", a `method` that is no string, `params` that are neither array nor object, an `id`
 *   that is neither string, number nor null: -32600, with `id: null` when the id is unusable.
 *
 * Two choices for the reference's clients (spec/jsonrpc.yaml): a request without `id` is answered
 * as one with `id: null` (node-runtime.md's envelope has no id, and the reference answers it; none
 * of these methods is fire-and-forget), and an integer id beyond 2^53 is answered with its own
 * digits (JSON.rawJSON), not a rounded number.
 *
 * @module
 */

/** One JSON-RPC request that passed the checks. */
export interface RpcRequest {
  jsonrpc: "2.0";
  method: string;
  params?: unknown;
  /** A string, a number, null, or the raw digits of a number too large for a double. */
  id: string | number | null | object;
}

/** An answer decided before dispatch. */
export interface RpcErrorAnswer {
  jsonrpc: "2.0";
  id: string | number | null | object;
  error: { code: number; message: string };
}

/** A body read: one request or answer, a batch of them, or text that is not JSON. */
export type Envelope =
  | { kind: "single"; item: RpcRequest | RpcErrorAnswer }
  | { kind: "batch"; items: (RpcRequest | RpcErrorAnswer)[] };

/** JSON-RPC's parse error. */
export const PARSE_ERROR = -32700;
/** JSON-RPC's invalid request error. */
export const INVALID_REQUEST = -32600;

const invalid = (id: RpcErrorAnswer["id"], why: string): RpcErrorAnswer => ({
  jsonrpc: "2.0",
  id,
  error: { code: INVALID_REQUEST, message: `Invalid Request: ${why}` },
});

/** Keeps the digits of a request id too large for a double (only ids of request objects). */
function keepLargeIds(
  this: Record<string, unknown>,
  key: string,
  value: unknown,
  context?: { source?: string },
): unknown {
  if (
    key === "id" && typeof value === "number" && !Number.isSafeInteger(value) &&
    Number.isInteger(value) && "method" in this && context?.source !== undefined
  ) {
    return (JSON as unknown as { rawJSON(text: string): object }).rawJSON(context.source);
  }
  return value;
}

function isRawNumber(value: unknown): boolean {
  return typeof value === "object" && value !== null &&
    (JSON as unknown as { isRawJSON(value: unknown): boolean }).isRawJSON(value);
}

/** Checks one member of a body. */
export function checkRequest(value: unknown): RpcRequest | RpcErrorAnswer {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return invalid(null, "a request is a JSON object");
  }
  const request = value as Record<string, unknown>;
  const id = request.id;
  const idUsable = id === undefined || id === null || typeof id === "string" ||
    typeof id === "number" || isRawNumber(id);
  if (!idUsable) return invalid(null, "id must be a string, a number or null");
  const answerId = (id ?? null) as RpcErrorAnswer["id"];
  if (request.jsonrpc !== "2.0") return invalid(answerId, 'jsonrpc must be "2.0"');
  if (typeof request.method !== "string") return invalid(answerId, "method must be a string");
  const params = request.params;
  if (params !== undefined && (typeof params !== "object" || params === null)) {
    return invalid(answerId, "params must be an array or an object");
  }
  return { ...request, jsonrpc: "2.0", method: request.method, id: answerId } as RpcRequest;
}

/** Reads a body; undefined when it is not JSON (answer -32700). */
export function readEnvelope(text: string): Envelope | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text, keepLargeIds as (key: string, value: unknown) => unknown);
  } catch {
    return undefined;
  }
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) return { kind: "single", item: invalid(null, "an empty batch") };
    return { kind: "batch", items: parsed.map(checkRequest) };
  }
  return { kind: "single", item: checkRequest(parsed) };
}

/** Whether an item is an answer decided before dispatch. */
export function isAnswer(item: RpcRequest | RpcErrorAnswer): item is RpcErrorAnswer {
  return "error" in item && !("method" in item && typeof item.method === "string");
}
