/**
 * Files the user names on a command line (images, listings, key and token files): read whole,
 * with a one-line error in the user's words ("cannot read x.tar: no such file", exit 2) instead
 * of the OS's ("No such file or directory (os error 2): readfile 'x.tar'").
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { osReason } from "../config/file_errors.ts";

/** Why a file cannot be read, in a few words. */
function reason(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof Deno.errors.IsADirectory) return "it is a directory";
  return osReason(error).toLowerCase();
}

/** The bytes of `path`; a ConfigError naming the file when it cannot be read. */
export async function readUserFile(path: string): Promise<Uint8Array> {
  try {
    return await Deno.readFile(path);
  } catch (error) {
    throw new ConfigError(`cannot read ${path}: ${reason(error)}`);
  }
}

/**
 * `path` opened for streaming (files too large to read whole, such as models); a ConfigError
 * naming the file when it cannot be read or is a directory.
 */
export async function openUserFile(path: string): Promise<Deno.FsFile> {
  let file: Deno.FsFile | undefined;
  try {
    file = await Deno.open(path);
    if ((await file.stat()).isDirectory) throw new Deno.errors.IsADirectory(path);
    return file;
  } catch (error) {
    file?.close();
    throw new ConfigError(`cannot read ${path}: ${reason(error)}`);
  }
}

/** The text of `path`; a ConfigError naming the file when it cannot be read. */
export async function readUserText(path: string): Promise<string> {
  return new TextDecoder().decode(await readUserFile(path));
}

/**
 * A secret kept in a file (a key or a token), without its surrounding white space; `-` reads
 * standard input. An empty file is an error, and a file other users may read gets a warning
 * (secrets belong in 0600 files). The secret itself is never part of a message.
 */
export async function readSecretFile(path: string, what: string): Promise<string> {
  const stdin = path === "-";
  const text = stdin ? await new Response(Deno.stdin.readable).text() : await readUserText(path);
  const secret = text.trim();
  const shown = stdin ? "standard input" : path;
  if (!secret) throw new ConfigError(`${shown} holds no ${what}`);
  if (/\s/.test(secret)) throw new ConfigError(`${shown} must hold one ${what} on one line`);
  if (!stdin) {
    const mode = (await Deno.stat(path)).mode;
    if (mode !== null && (mode & 0o077) !== 0) {
      console.error(`warning: other users may read ${path}; chmod 600 ${path}`);
    }
  }
  return secret;
}
