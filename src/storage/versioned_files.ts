/**
 * Code edgenode carries as strings (bundles/) and runs as files: written once per version into
 * `<dir>/<hash of the sources>/`, through a temporary folder renamed into place, other versions
 * removed. A bundled or compiled edgenode never reads its source tree at run time.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";

/**
 * Writes `files` (name to source) into `<dir>/<hash>/` unless that version is there already;
 * returns the folder.
 *
 * @example
 * ```ts
 * const folder = await writeVersioned("/var/lib/edgenode/inference", { "main.js": "..." });
 * ```
 */
export async function writeVersioned(dir: string, files: Record<string, string>): Promise<string> {
  const hash = createHash("sha256");
  for (const [name, source] of Object.entries(files)) hash.update(name).update(source);
  const version = hash.digest("hex").slice(0, 16);
  const target = join(dir, version);
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name !== version) await Deno.remove(join(dir, entry.name), { recursive: true });
  }
  if (await Deno.stat(target).then(() => true, () => false)) return target;
  const temp = join(dir, `.${version}-${crypto.randomUUID()}`);
  await Deno.mkdir(temp, { mode: 0o700 });
  for (const [name, source] of Object.entries(files)) {
    await Deno.writeTextFile(join(temp, name), source);
  }
  await Deno.rename(temp, target);
  return target;
}
