/**
 * What went wrong when fetch could not reach a source, in words a user can act on. Deno's fetch
 * throws `TypeError: fetch failed` and keeps the reason in `cause` ("error sending request for
 * url (…): client error (Connect): dns error: …"); the registry's download error names it.
 *
 * @example
 * ```ts
 * import { fetchFailure } from "./fetch_failure.ts";
 * try {
 *   await fetch("http://nosuchhost.invalid/m.gguf");
 * } catch (error) {
 *   console.log(fetchFailure(error)); // the host name does not resolve (DNS: …)
 * }
 * ```
 *
 * @module
 */

/** The messages of `error` and of its causes, outermost first. */
function messages(error: unknown): string[] {
  const found: string[] = [];
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    found.push(e.message);
  }
  return found;
}

/** Why a fetch failed: DNS, a refused or reset connection, TLS, or the innermost message. */
export function fetchFailure(error: unknown): string {
  const all = messages(error);
  if (all.length === 0) return String(error);
  const text = all.join(": ");
  // The detail after the request's own prefix and hyper's "client error (Connect)".
  const detail = (all.at(-1) ?? "")
    .replace(/^error sending request for url \([^)]*\):\s*/, "")
    .replace(/^client error \(\w+\):\s*/, "");
  if (/dns error|failed to lookup address|name or service not known/i.test(text)) {
    return `the host name does not resolve (DNS: ${detail.replace(/^dns error:\s*/, "")})`;
  }
  if (/connection refused/i.test(text)) {
    return "the connection was refused (nothing listens at that address and port)";
  }
  if (/certificate|tls|ssl|handshake|corrupt message|InvalidContentType/i.test(text)) {
    return `TLS failed (${detail})`;
  }
  if (/connection reset/i.test(text)) return `the connection was reset (${detail})`;
  if (/timed out/i.test(text)) return `the connection timed out (${detail})`;
  return detail || all[0];
}
