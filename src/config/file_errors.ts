/**
 * What is wrong with a file the program needs, in the user's words: the system's reason without
 * its call and path, a file this user may not read, and a secret file other users may read. The
 * node's config file and key files, the issuer's key and the data directory's checks say it the
 * same way.
 *
 * @module
 */
import { ConfigError } from "./config_error.ts";

/**
 * What the system said, without the call and its path (the message names the path itself):
 * "Permission denied" of "Permission denied (os error 13): open '/x'".
 */
export function osReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/ \(os error \d+\).*$/s, "");
}

/** The error for `path` that this user may not read: the reason, and who should own it. */
export function unreadable(path: string, error: unknown): ConfigError {
  return new ConfigError(
    `${path} cannot be read (${osReason(error)}): give it to the user edgenode runs as (chown)`,
  );
}

/** Warns, on stderr, when users other than the owner may read `path` (it holds a secret). */
export async function warnIfReadableByOthers(path: string): Promise<void> {
  const mode = (await Deno.stat(path)).mode;
  if (mode !== null && (mode & 0o077) !== 0) {
    console.warn(
      `warning: ${path} is readable by others (mode ${
        (mode & 0o777).toString(8)
      }); run chmod 600 on it`,
    );
  }
}
