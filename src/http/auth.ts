/**
 * API key checks for `Authorization: Bearer <key>`.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Forbidden, Unauthenticated } from "../errors/mod.ts";

/** SHA-256, synchronously: WebCrypto's promise costs more than the hash of a short key. */
function digest(value: string): Uint8Array {
  return createHash("sha256").update(value).digest();
}

/** The bearer credential of a request, or undefined when there is none. */
export function bearerToken(request: Request): string | undefined {
  return bearerOf(request.headers.get("authorization"));
}

/**
 * The credential of an `Authorization`-style header's value (`Bearer <credential>`): undefined
 * without one, "" when it is not a bearer credential.
 */
export function bearerOf(header: string | null): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1] : "";
}

/**
 * Compares two secrets in constant time. Both are hashed first so that neither their length nor
 * their content decides how long the comparison takes.
 */
export function secretsEqual(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** A request without credentials, saying what `Authorization: Bearer` must carry. */
function missingCredentials(what: string): Unauthenticated {
  return new Unauthenticated(`missing credentials: send 'Authorization: Bearer <${what}>'`);
}

/** The request's bearer credential; Unauthenticated when there is none (`what` names it). */
export function requireBearer(request: Request, what: string): string {
  const token = bearerToken(request);
  if (!token) throw missingCredentials(what);
  return token;
}

/**
 * Throws Unauthenticated when the request carries no bearer key, and Forbidden when the key is
 * wrong (Unauthenticated when `wrongKeyStatus` is 401, as insight's spec says).
 */
export function requireApiKey(
  request: Request,
  apiKey: string,
  wrongKeyStatus: 401 | 403 = 403,
): void {
  requireApiKeyIn(request.headers.get("authorization"), apiKey, wrongKeyStatus);
}

/** `requireApiKey` on the value of the request's Authorization header (null: none). */
export function requireApiKeyIn(
  authorization: string | null,
  apiKey: string,
  wrongKeyStatus: 401 | 403 = 403,
): void {
  const token = bearerOf(authorization);
  if (token === undefined) throw missingCredentials("API key");
  if (token === "" || !secretsEqual(token, apiKey)) {
    throw wrongKeyStatus === 401
      ? new Unauthenticated("incorrect API key")
      : new Forbidden("incorrect API key");
  }
}
