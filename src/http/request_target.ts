/**
 * The path and query of a request, split without parsing its whole URL (this runs per request).
 *
 * @module
 */

/** The path and query of a request URL, without parsing all of it (this runs per request). */
export function splitUrl(url: string): { path: string; search: string } {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return { path: "/", search: "" };
  const query = url.indexOf("?", start);
  return query < 0
    ? { path: url.slice(start), search: "" }
    : { path: url.slice(start, query), search: url.slice(query) };
}

/** The path and query of a request target (`/path?query`). */
export function splitTarget(target: string): { path: string; search: string } {
  const query = target.indexOf("?");
  return query < 0
    ? { path: target, search: "" }
    : { path: target.slice(0, query), search: target.slice(query) };
}
