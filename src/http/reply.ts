/**
 * Typed answers: a handler's return type is checked against the success responses its spec
 * operation declares (the `responses` of the generated route table). `json(200, model)` is a
 * Response whose type records the status and the body, so a handler that returns a body or a
 * status its operation does not declare is a compile error. Errors are not answers: they are
 * thrown as domain errors and mapped at the edge.
 *
 * @example
 * ```ts
 * import { json } from "./reply.ts";
 *
 * const answer = json(201, { id: "m1" }); // Reply<201, { json: { id: string } }>
 * ```
 *
 * @module
 */
import { CORS_ORIGIN, withCors } from "./cors.ts";

declare const declared: unique symbol;

/** Headers of JSON answers, CORS included. */
const JSON_HEADERS = { "Content-Type": "application/json", ...CORS_ORIGIN };
/** A 200 with Content-Type alone: what Deno serves on its fastest path (see `jsonAnswer`). */
const JSON_200 = { status: 200, headers: { "Content-Type": "application/json" } };

/**
 * A JSON answer as it goes out: its status, its header list as `[...response.headers]` gives it
 * (lower-case names, sorted) and its text. The tunnel sends these instead of reading the
 * Response's headers and body stream (src/hub_client/tunnel_requests.ts).
 */
export interface ReadyAnswer {
  readonly status: number;
  readonly headers: readonly (readonly [string, string])[];
  readonly text: string;
}

/** The header list of a JSON answer without other headers, as Headers iterates it. */
const JSON_HEADER_LIST = Object.freeze([
  Object.freeze(["access-control-allow-origin", "*"] as const),
  Object.freeze(["content-type", "application/json"] as const),
]);

const READY = Symbol("ready answer");

/**
 * Marks `response` as what `answer` says it is. Only for answers whose headers nobody changes
 * after (typed answers: the pipeline leaves those carrying CORS as they are).
 */
function withReady<R extends Response>(response: R, answer: ReadyAnswer): R {
  (response as unknown as Record<symbol, ReadyAnswer>)[READY] = answer;
  return response;
}

/** The ready parts of a JSON answer made here without other headers; undefined otherwise. */
export function readyAnswerOf(response: Response): ReadyAnswer | undefined {
  return (response as unknown as Record<symbol, ReadyAnswer | undefined>)[READY];
}

/**
 * A JSON answer, marked as carrying CORS (cors.ts) and, without other headers, with its ready
 * parts (`readyAnswerOf`). A 200 without other headers is made with its
 * Content-Type alone and gets CORS set afterwards: Deno 2.9 prepares a native copy of the headers
 * of a Response made with more than a Content-Type (an op and a finalizer per answer), which
 * measured slower than the header list it serves otherwise (about 0.5 µs of CPU per request).
 */
function jsonAnswer(status: number, text: string, headers?: Record<string, string>): Response {
  if (status === 200 && headers === undefined) {
    const response = new Response(text, JSON_200);
    response.headers.set("Access-Control-Allow-Origin", "*");
    return withReady(withCors(response), { status, headers: JSON_HEADER_LIST, text });
  }
  if (headers === undefined) {
    return withReady(withCors(new Response(text, { status, headers: JSON_HEADERS })), {
      status,
      headers: JSON_HEADER_LIST,
      text,
    });
  }
  return withCors(
    new Response(text, {
      status,
      headers: headers ? { ...JSON_HEADERS, ...headers } : JSON_HEADERS,
    }),
  );
}

/** What a spec response may carry, as the route table's `responses` says. */
export type Content = { json: unknown } | { raw: true } | { empty: true };

/**
 * A Response known to have one of the statuses `S` and content `C`. Distributes over a union of
 * statuses, so `json(created ? 201 : 200, body)` fits an operation declaring both.
 */
export type Reply<S extends number, C extends Content> = S extends number
  ? Response & { readonly [declared]: { status: S; content: C } }
  : never;

/** The answers an operation declares: one Reply per status of its `responses`. */
export type RepliesOf<M> = {
  [S in keyof M & number]: M[S] extends Content ? Reply<S, M[S]> : never;
}[keyof M & number];

/** JSON text whose type records what it encodes (a cached body, see json_cache.ts). */
export type JsonText<B> = string & { readonly [declared]: B };

/** A JSON answer. */
export function json<S extends number, B>(
  status: S,
  body: B,
  headers?: Record<string, string>,
): Reply<S, { json: B }> {
  return jsonAnswer(status, JSON.stringify(body), headers) as Reply<S, { json: B }>;
}

/** A JSON answer from text already encoded. */
export function jsonText<S extends number, B>(
  status: S,
  text: JsonText<B>,
  headers?: Record<string, string>,
): Reply<S, { json: B }> {
  return jsonAnswer(status, text, headers) as Reply<S, { json: B }>;
}

/**
 * A JSON 200 made once, handed out as copies: a copy (Response.clone) takes the template's
 * header list as it is, without the header validation a new Response goes through.
 */
export function preparedJson<B>(text: JsonText<B>): () => Reply<200, { json: B }> {
  const template = jsonAnswer(200, text);
  const ready = readyAnswerOf(template)!;
  return () => withReady(withCors(template.clone()), ready) as Reply<200, { json: B }>;
}

/** An answer without a body (a HEAD, a 304, a 204), with its headers. */
export function empty<S extends number>(
  status: S,
  headers?: Record<string, string>,
): Reply<S, { empty: true }> {
  const all = { ...CORS_ORIGIN, ...headers };
  return withCors(new Response(null, { status, headers: all })) as Reply<S, { empty: true }>;
}

/**
 * A Response built elsewhere (a file, an event stream, a WebSocket upgrade), declared to be one
 * of `statuses` with a non-JSON body. Checked at run time too: another status is a bug.
 */
export function raw<S extends number>(
  response: Response,
  statuses: readonly S[],
): Reply<S, { raw: true }> {
  if (!(statuses as readonly number[]).includes(response.status)) {
    throw new Error(`answer status ${response.status} is not one of ${statuses.join(", ")}`);
  }
  return response as Reply<S, { raw: true }>;
}

/** A file answer (file_response.ts): its bytes with 200 or 206, or 304 without them. */
export function fileReply(
  response: Response,
): Reply<200 | 206, { raw: true }> | Reply<304, { empty: true }> {
  return response.status === 304
    ? response as Reply<304, { empty: true }>
    : raw(response, [200, 206]);
}

/** The answer to a HEAD: one of `statuses`, headers only (Deno sends no body for HEAD). */
export function headReply<S extends number>(
  response: Response,
  statuses: readonly S[],
): Reply<S, { empty: true }> {
  raw(response, statuses);
  return response as unknown as Reply<S, { empty: true }>;
}

/** The answer that switches protocols (Deno.upgradeWebSocket's): 101, no body. */
export function upgradeReply(response: Response): Reply<101, { empty: true }> {
  return headReply(response, [101]);
}
