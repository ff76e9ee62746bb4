/**
 * The one error shape every edgenode HTTP API answers with:
 * `{ "error": { "code": <HTTP status>, "message": "<what to fix>" } }`.
 *
 * @module
 */

/** An error meant for the caller: its status and message go into the response as they are. */
export class HttpError extends Error {
  /** The HTTP status, 4xx for the caller's mistakes. */
  readonly status: number;
  /** Extra response headers, such as `Allow` or `Content-Range`. */
  readonly headers: HeadersInit | undefined;

  /** Creates an error with an HTTP status and a message that says what to fix. */
  constructor(status: number, message: string, headers?: HeadersInit) {
    super(message);
    this.name = "HttpError";
    this.status = status;
    this.headers = headers;
  }
}

/** A JSON response with the given status. */
export function jsonResponse(body: unknown, status = 200, headers?: HeadersInit): Response {
  return Response.json(body, { status, headers });
}

/** An error response in the standard shape. */
export function errorResponse(status: number, message: string, headers?: HeadersInit): Response {
  return jsonResponse({ error: { code: status, message } }, status, headers);
}

/** Turns anything thrown by a handler into a response; unexpected errors become a logged 500. */
export function responseForError(error: unknown, request: Request): Response {
  if (error instanceof HttpError) return errorResponse(error.status, error.message, error.headers);
  const id = crypto.randomUUID();
  console.error(`[${id}] ${request.method} ${new URL(request.url).pathname} failed:`, error);
  return errorResponse(500, `internal error (logged as ${id})`);
}
