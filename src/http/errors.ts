/**
 * The shapes errors are sent in, and the answer to anything a handler throws. The registry's shape,
 * `{ "error": { "code": <HTTP status>, "message": "<what to fix>" } }`, is the default; a service
 * whose spec says otherwise (insight: `{ message, statusCode }`) passes its own ErrorFormat.
 *
 * @module
 */
import { DomainError } from "../errors/mod.ts";
import { httpFormOf, type StatusOverrides } from "./error_statuses.ts";

/** A JSON response with the given status. */
export function jsonResponse(body: unknown, status = 200, headers?: HeadersInit): Response {
  return Response.json(body, { status, headers });
}

/** Builds an error response of one service's shape. */
export type ErrorFormat = (status: number, message: string, headers?: HeadersInit) => Response;

/** An error response in the standard shape. */
export const errorResponse: ErrorFormat = (status, message, headers) =>
  jsonResponse({ error: { code: status, message } }, status, headers);

/** The insight spec's error shape, which the hub uses too: `{ message, statusCode }`. */
export const statusCodeError: ErrorFormat = (status, message, headers) =>
  jsonResponse({ message, statusCode: status }, status, headers);

/**
 * Turns anything thrown by a handler into a response: domain errors by the table of
 * error_statuses.ts (with the service's overrides), unexpected errors as a logged 500.
 */
export function responseForError(
  error: unknown,
  request: Request,
  format: ErrorFormat = errorResponse,
  overrides?: StatusOverrides,
): Response {
  if (error instanceof DomainError) {
    const { status, headers } = httpFormOf(error, overrides);
    return format(status, error.message, headers);
  }
  const id = crypto.randomUUID();
  console.error(`[${id}] ${request.method} ${new URL(request.url).pathname} failed:`, error);
  return format(500, `internal error (logged as ${id})`);
}
