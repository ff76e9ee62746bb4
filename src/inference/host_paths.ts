/**
 * Messages of the engine and its installer as callers may read them: they name host paths (the
 * data directory, the engine's install folder) and native frames, which stay in the node's log.
 *
 * @module
 */

/** `message`'s first line, without host paths, at most 500 characters. */
export function scrubbed(message: string): string {
  const line = message.split("\n")[0].trim().slice(0, 500);
  return line.replace(/(?:[A-Za-z]:)?(?:[\\/][\w.@+~-]+){2,}[\\/]?/g, "<path>");
}
