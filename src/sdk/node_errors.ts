/**
 * How a node's failures reach a client: the message of an error answer (whatever the service's
 * shape), an answer other than the one asked for (NodeError), and a node that cannot be reached
 * at all (NodeUnreachableError, raised by the fetch every SDK client uses). Browser-safe: the
 * dashboard bundles it.
 *
 * @module
 */

/** An answer of the node other than the one asked for: its status and message. */
export class NodeError extends Error {
  /** Always "NodeError". */
  override name = "NodeError";
  /** The HTTP status of the answer (or of the download's error message). */
  readonly status: number;

  /** An error of HTTP `status` with the node's `message`. */
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/**
 * An answer that is not what an edgenode node sends (its errors are always JSON): the client
 * is most likely pointed at another server.
 */
export class NotANodeError extends NodeError {
  /** Always "NotANodeError". */
  override name = "NotANodeError";
}

/** No answer at all: the connection failed before the node could say anything. */
export class NodeUnreachableError extends Error {
  /** Always "NodeUnreachableError". */
  override name = "NodeUnreachableError";
  /** The node's base URL, as the client was given it. */
  readonly url: string;
  /** Why, in a few words: "connection refused", "unknown host", "timed out", ... */
  readonly reason: string;

  /** The node at `url` could not be reached; `cause` is fetch's error. */
  constructor(url: string, cause: unknown) {
    const reason = unreachableReason(cause);
    super(`cannot reach the node at ${url} (${reason})`, { cause });
    this.url = url;
    this.reason = reason;
  }
}

/**
 * The message of an error answer's body: the store's and MCM's `{ error: { message } }`,
 * insight's `{ message, statusCode }`, or a plain text body. Undefined when there is none.
 */
export function errorMessage(body: unknown): string | undefined {
  if (typeof body === "string") return body.trim() || undefined;
  if (typeof body !== "object" || body === null) return undefined;
  const { error, message } = body as { error?: unknown; message?: unknown };
  if (typeof error === "object" && error !== null) {
    const inner = (error as { message?: unknown }).message;
    if (typeof inner === "string") return inner;
  }
  if (typeof error === "string") return error;
  return typeof message === "string" ? message : undefined;
}

/**
 * A NodeError for a failed answer and its (already read) body: "WHAT: STATUS MESSAGE"; a
 * NotANodeError when the answer is not JSON, as a node's never is.
 */
export function nodeError(response: Response, body: unknown, what: string): NodeError {
  const type = response.headers.get("content-type") ?? "";
  if (!/json/i.test(type)) return notANode(response, what);
  const message = errorMessage(body) ?? response.statusText;
  return new NodeError(response.status, `${what}: ${response.status} ${message}`.trimEnd());
}

/** The NotANodeError of an answer to `what`, naming the server that gave it. */
export function notANode(response: Response, what: string): NotANodeError {
  const type = response.headers.get("content-type")?.split(";")[0] || "no content type";
  const origin = response.url ? new URL(response.url).origin : "the server";
  return new NotANodeError(
    response.status,
    `${what}: ${origin} answered ${response.status} (${type}), not as an edgenode node does`,
  );
}

/** The innermost message of an error and its causes. */
function innermost(error: unknown): string {
  let current = error;
  let message = String(error);
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    message = current.message;
    current = current.cause;
  }
  return message;
}

/** fetch's failure in a few words (Deno's message is a chain of Rust error texts). */
function unreachableReason(error: unknown): string {
  const text = innermost(error);
  const known: [RegExp, string][] = [
    [/connection refused/i, "connection refused"],
    [/dns error|failed to lookup|not known|nodename nor servname/i, "unknown host"],
    [/timed out|timeout/i, "timed out"],
    [/connection reset/i, "connection reset"],
    [/network is unreachable/i, "network unreachable"],
    [/no route to host/i, "no route to host"],
  ];
  for (const [pattern, reason] of known) if (pattern.test(text)) return reason;
  const blocked = /requests to port (\d+) are blocked/i.exec(text);
  if (blocked) return `port ${blocked[1]} is blocked by fetch`;
  // Anything else: the last part of the innermost message, without the OS error number.
  const last = text.split(": ").at(-1) ?? "";
  return last.replace(/\s*\(os error \d+\)$/, "").trim() || "no answer";
}

/**
 * A fetch for the node at `baseUrl`: as the global fetch, but a failed connection is a
 * NodeUnreachableError naming the node (aborts stay AbortErrors).
 */
export function nodeFetch(baseUrl: string): typeof fetch {
  return async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (error) {
      const name = (error as Error | undefined)?.name;
      if (name === "AbortError" || name === "TimeoutError") throw error;
      throw new NodeUnreachableError(baseUrl, error);
    }
  };
}
