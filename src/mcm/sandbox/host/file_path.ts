/**
 * A `file:` URL as the path Deno's permissions take (the sandbox's bundle has no node:url or
 * @std/path): percent-escapes decoded, so that a folder with a space or a non-ASCII character
 * in its name is the folder meant.
 *
 * @module
 */

/** The path of a `file:` URL (on Windows, with its drive letter and backslashes). */
export function fileUrlPath(url: string | URL): string {
  const parsed = new URL(url);
  if (parsed.protocol !== "file:") throw new TypeError(`not a file URL: ${parsed.href}`);
  const path = decodeURIComponent(parsed.pathname);
  if (/^\/[A-Za-z]:\//.test(path)) return path.slice(1).replaceAll("/", "\\");
  // A UNC path (file://server/share/...).
  return parsed.hostname ? `//${parsed.hostname}${path}` : path;
}
