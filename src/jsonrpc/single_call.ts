/**
 * The common body, read quickly: one valid call of a known method whose params hold no nested
 * object. What envelope.ts and json-rpc-2.0 would do with it is then known without them: the
 * envelope check passes it unchanged (with a missing id answered as null), and the library calls
 * the method. Anything else (a batch, an invalid request, an unknown method, an id too large for
 * a double, params with objects inside, which envelope.ts's reviver may rewrite) is left to them:
 * undefined.
 *
 * JSON.parse without a reviver is what makes this quicker: envelope.ts's reviver, which keeps the
 * digits of large ids, is called for every value of the body.
 *
 * @module
 */

const SPACE = 0x20;
const OPEN_BRACE = 0x7b;

/** A call the endpoint may answer directly. */
export interface SingleCall {
  id: string | number | null;
  method: string;
  params: unknown;
}

/** Whether a value holds no object (null is no object here). */
function flat(value: object): boolean {
  for (const member of Object.values(value)) {
    if (typeof member === "object" && member !== null) return false;
  }
  return true;
}

/** The call in `text` when it is one this module knows the answer path of; undefined otherwise. */
export function singleCall(text: string, methods: ReadonlySet<string>): SingleCall | undefined {
  // A body that is not an object is never one: skip the parse (a batch, mostly).
  let start = 0;
  while (start < text.length && text.charCodeAt(start) <= SPACE) start++;
  if (text.charCodeAt(start) !== OPEN_BRACE) return undefined;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { jsonrpc, method, params, id } = parsed;
  if (jsonrpc !== "2.0" || typeof method !== "string" || !methods.has(method)) return undefined;
  // json-rpc-2.0 refuses a request that carries a result or an error.
  if (parsed.result !== undefined || parsed.error !== undefined) return undefined;
  if (params !== undefined && (typeof params !== "object" || params === null || !flat(params))) {
    return undefined;
  }
  if (id === undefined || id === null || typeof id === "string") {
    return { id: id ?? null, method, params };
  }
  // An integer beyond 2^53 keeps its digits through envelope.ts (JSON.rawJSON).
  if (typeof id === "number" && (Number.isSafeInteger(id) || !Number.isInteger(id))) {
    return { id, method, params };
  }
  return undefined;
}
