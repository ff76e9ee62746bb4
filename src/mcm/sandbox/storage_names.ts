/**
 * The names of a container's storage files, as the microservice gives them to
 * `context.storage.saveFile`, `deleteFile`, `context.http.request({ outputFile })`,
 * `res.writeMimeFile`, form uploads and `context.ml`: `/`-separated relative paths such as
 * `cache/tiny.gguf` (the reference's mILM keeps its models there), resolved inside the
 * container's `<storage>/files/` folder and never out of it. Shared by the container process
 * (sandbox/host/storage_files.ts) and the node (which loads a container's file for
 * `context.ml`), so both refuse the same names. Imports nothing.
 *
 * @module
 */

/** The longest name, in characters, `/` included. */
export const MAX_STORAGE_NAME_LENGTH = 1024;

/** One segment: at most 255 characters of a small safe set, not `.` or `..` (checked apart). */
const SEGMENT_PATTERN = /^[A-Za-z0-9_.-][A-Za-z0-9_. +=@-]{0,254}$/;

/** A name the storage's own temporary files take (storage_files.ts): never a microservice's. */
export const TEMP_FILE_PREFIX = ".partial-";

/** A refused name or path; its message is what the microservice sees. */
export class StorageNameError extends Error {}

/**
 * The segments of a storage file name, checked: each as a single file name was before folders
 * (letters, digits and `. _ - + = @`, 1 to 255), no `.` or `..` segment, no empty one (so no
 * leading `/`, no `a//b`, no trailing `/`), no backslash, at most 1024 characters in all.
 */
export function storageNameSegments(name: string): string[] {
  const shown = JSON.stringify(String(name).slice(0, 80));
  const refuse = (why: string) =>
    new StorageNameError(
      `${shown} is not a file name of the container's storage: ${why} (use '/'-separated folders and a file name ` +
        `of 1 to 255 letters, digits and . _ - + = @, e.g. "cache/model.gguf")`,
    );
  if (typeof name !== "string" || name.length === 0) throw refuse("it is empty");
  if (name.length > MAX_STORAGE_NAME_LENGTH) {
    throw refuse(`longer than ${MAX_STORAGE_NAME_LENGTH} characters`);
  }
  if (name.includes("\\")) throw refuse("a backslash is not a folder separator here");
  if (name.startsWith("/")) throw refuse("it must be relative to the container's storage");
  const segments = name.split("/");
  for (const segment of segments) {
    if (segment === "") throw refuse("it has an empty segment ('//' or a trailing '/')");
    if (segment === "." || segment === "..") throw refuse(`'${segment}' segments are refused`);
    if (!SEGMENT_PATTERN.test(segment)) {
      throw refuse(`'${segment.slice(0, 80)}' has a refused character`);
    }
    if (segment.startsWith(TEMP_FILE_PREFIX)) throw refuse(`'${TEMP_FILE_PREFIX}' is reserved`);
  }
  return segments;
}

/** What lstat says of a path: "missing", "folder", "file", or "other" (a link, a device…). */
function kindOf(path: string): "missing" | "folder" | "file" | "other" {
  try {
    const info = Deno.lstatSync(path);
    if (info.isSymlink) return "other";
    return info.isDirectory ? "folder" : info.isFile ? "file" : "other";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "missing";
    throw error;
  }
}

/**
 * The absolute path of storage file `name` inside `filesDir` (a container's
 * `<storage>/files`), checked: its name (storageNameSegments), and on disk no link and nothing
 * but folders on the way, no link in its place, and the real path of its deepest existing folder
 * inside the real `filesDir`. Folders still missing are not made here; `missingFolders` says how
 * many a write would make. The file itself may be missing.
 */
export function resolveStorageFile(
  filesDir: string,
  name: string,
): { path: string; missingFolders: string[] } {
  const segments = storageNameSegments(name);
  const root = Deno.realPathSync(filesDir);
  let folder = filesDir;
  const missingFolders: string[] = [];
  for (const segment of segments.slice(0, -1)) {
    folder = `${folder}/${segment}`;
    if (missingFolders.length > 0) {
      missingFolders.push(folder);
      continue;
    }
    const kind = kindOf(folder);
    if (kind === "missing") missingFolders.push(folder);
    else if (kind !== "folder") {
      throw new StorageNameError(
        `${JSON.stringify(name)}: '${segment}' is not a folder of the storage (a file or a link)`,
      );
    }
  }
  const path = `${filesDir}/${name}`;
  if (missingFolders.length === 0) {
    const real = Deno.realPathSync(folder);
    if (real !== root && !real.startsWith(`${root}/`)) {
      throw new StorageNameError(`${JSON.stringify(name)} leads out of the container's storage`);
    }
    const kind = kindOf(path);
    if (kind === "other") {
      throw new StorageNameError(`${JSON.stringify(name)} is a link or a special file: refused`);
    }
  }
  return { path, missingFolders };
}

/**
 * The absolute path of storage file `name` of the container whose storage folder is
 * `storageDir` (mcm/images/bundle_files.ts `storagePath`), checked as resolveStorageFile does;
 * for the node, e.g. `context.ml` on `cache/x.gguf`. Throws StorageNameError.
 */
export function storageFilePath(storageDir: string, name: string): string {
  return resolveStorageFile(`${storageDir}/files`, name).path;
}
