/**
 * API key checks for `Authorization: Bearer <key>`.
 *
 * @module
 */
import { timingSafeEqual } from "node:crypto";
import { HttpError } from "./errors.ts";

const encoder = new TextEncoder();

async function digest(value: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(value)));
}

/** The bearer credential of a request, or undefined when there is none. */
export function bearerToken(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  if (!header) return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1] : "";
}

/**
 * Compares two secrets in constant time. Both are hashed first so that neither their length nor
 * their content decides how long the comparison takes.
 */
export async function secretsEqual(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([digest(given), digest(expected)]);
  return timingSafeEqual(a, b);
}

/**
 * Throws 401 when the request carries no bearer key, and `wrongKeyStatus` (403 unless a spec
 * says otherwise) when the key is wrong.
 */
export async function requireApiKey(
  request: Request,
  apiKey: string,
  wrongKeyStatus: 401 | 403 = 403,
): Promise<void> {
  const token = bearerToken(request);
  if (token === undefined) {
    throw new HttpError(401, "missing credentials: send 'Authorization: Bearer <API key>'", {
      "WWW-Authenticate": 'Bearer realm="edgenode"',
    });
  }
  if (token === "" || !(await secretsEqual(token, apiKey))) {
    throw new HttpError(wrongKeyStatus, "incorrect API key");
  }
}
