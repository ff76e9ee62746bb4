/**
 * The shapes errors are sent in, and the answer to anything a handler or a stream throws. The
 * registry's shape, `{ "error": { "code": <HTTP status>, "message": "<what to fix>" } }`, is the
 * default; a service whose spec says otherwise (insight: `{ message, statusCode }`, inference:
 * OpenAI's) passes its own ErrorFormat, which gets the error's details to read fields from.
 *
 * @example
 * ```ts
 * import { NotFound } from "../errors/mod.ts";
 * import { errorPayload } from "./errors.ts";
 *
 * const { status, body } = errorPayload(new NotFound("no model 'm'"));
 * console.assert(status === 404 && body.message === "no model 'm'");
 * ```
 *
 * @module
 */
import { DomainError, type ErrorDetails } from "../errors/mod.ts";
import { httpFormOf, type StatusOverrides } from "./error_statuses.ts";

/** A JSON response with the given status. */
export function jsonResponse(body: unknown, status = 200, headers?: HeadersInit): Response {
  return Response.json(body, { status, headers });
}

/** Builds an error response of one service's shape; `details` are the error's structured facts. */
export type ErrorFormat = (
  status: number,
  message: string,
  headers?: HeadersInit,
  details?: ErrorDetails,
) => Response;

/** An error response in the standard shape. */
export const errorResponse: ErrorFormat = (status, message, headers) =>
  jsonResponse({ error: { code: status, message } }, status, headers);

/** The insight spec's error shape, which the hub uses too: `{ message, statusCode }`. */
export const statusCodeError: ErrorFormat = (status, message, headers) =>
  jsonResponse({ message, statusCode: status }, status, headers);

/** What answers an error at the edge, whatever shape the answer or the stream gives it. */
export interface ErrorPayload {
  /** The HTTP status (500 for what is not a domain error). */
  status: number;
  /** Headers the kind carries (Retry-After, Allow, WWW-Authenticate, Content-Range). */
  headers: Record<string, string>;
  /** The standard body: the status and the message the caller reads. */
  body: { code: number; message: string };
  /** The domain error's structured facts (the field at fault, what was not found). */
  details: ErrorDetails;
}

/**
 * The one mapping from anything thrown to what the caller gets: a domain error by the table of
 * error_statuses.ts (with a service's overrides) and its own message; anything else is logged
 * once, under `what` failed and an id, and answered 500 with that id and no internals.
 */
export function errorPayload(
  error: unknown,
  what = "request",
  overrides?: StatusOverrides,
): ErrorPayload {
  if (error instanceof DomainError) {
    const { status, headers } = httpFormOf(error, overrides);
    return {
      status,
      headers,
      body: { code: status, message: error.message },
      details: error.details,
    };
  }
  const id = crypto.randomUUID();
  console.error(`[${id}] ${what} failed:`, error);
  const message = `internal error (logged as ${id})`;
  return { status: 500, headers: {}, body: { code: 500, message }, details: {} };
}

/** Turns anything thrown by a handler into a response of the service's shape (errorPayload). */
export function responseForError(
  error: unknown,
  request: Request,
  format: ErrorFormat = errorResponse,
  overrides?: StatusOverrides,
): Response {
  const what = `${request.method} ${new URL(request.url).pathname}`;
  const { status, headers, body, details } = errorPayload(error, what, overrides);
  return format(status, body.message, headers, details);
}
