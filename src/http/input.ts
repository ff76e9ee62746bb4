/**
 * Reading request input at the boundary: the Content-Type and JSON bodies. Validation and the
 * reading of text within a limit are not HTTP's: src/streams/ holds them.
 *
 * @module
 */
import { Invalid, UnsupportedType } from "../errors/mod.ts";
import { readText } from "../streams/mod.ts";

/** Largest JSON body accepted, in bytes. */
export const MAX_JSON_BYTES = 64 * 1024;

/** Checks the Content-Type's media type against the accepted ones; 415 otherwise. */
export function requireContentType(request: Request, accepted: readonly string[]): string {
  const given = request.headers.get("content-type") ?? "";
  // The common case, a bare accepted type, without splitting and copying.
  if (accepted.includes(given)) return given;
  const mediaType = given.split(";")[0].trim().toLowerCase();
  if (!accepted.includes(mediaType)) {
    const got = mediaType ? `'${mediaType}'` : "none";
    throw new UnsupportedType(`Content-Type must be ${accepted.join(" or ")} (got ${got})`);
  }
  return mediaType;
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
