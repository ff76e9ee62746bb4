/**
 * A GGUF file that a container's `context.ml` call names in its own storage (the reference's
 * mILM passes `cache/<id>.gguf`): the name is checked by the storage rules, segment by segment,
 * and resolved inside the container's storage folder, links followed only where they stay in
 * it. A container names only its own storage: never another container's, nor the node's data.
 *
 * @module
 */
import { join, sep as SEP } from "node:path";
import { Invalid } from "../../errors/mod.ts";
import type { CallerFile } from "../../inference/caller_files.ts";
import { describeModelFile } from "../../store/gguf_metadata.ts";
import { GGUF_HEADER_BYTES, headerProblem } from "../../store/model_format.ts";

/** A storage name's segment: the storage rules' file name (storage_files.ts). */
const SEGMENT = /^[A-Za-z0-9_.-][A-Za-z0-9_. +=@-]{0,254}$/;
/** Files being written by a download or an upload (storage_files.ts): never a model. */
const PARTIAL = ".partial-";

/** A resolved file of a container's storage. */
export interface StorageModelFile {
  /** The name, its segments joined by '/'. */
  name: string;
  /** Its real path, inside the storage folder. */
  path: string;
  size: number;
  mtimeMs: number;
}

function quoted(name: string): string {
  return JSON.stringify(name.length > 300 ? `${name.slice(0, 300)}…` : name);
}

/** The refusal of a name that is no file of the caller's storage. */
export function notStorageFile(name: string, why: string): Invalid {
  return new Invalid(
    `model ${quoted(name)} is not a model of this node's registry nor a GGUF file of this ` +
      `container's storage: ${why}`,
  );
}

/**
 * The segments of a storage name, or why it is not one: `/`-separated, each a storage file
 * name (no '..', no '.', no empty segment, so no absolute path), no '\\'.
 */
export function storageSegments(name: string): string[] | string {
  if (name.startsWith("/")) {
    return "name the file by its path inside the container's storage, not an absolute path";
  }
  const segments = name.split("/");
  for (const segment of segments) {
    if (segment === "." || segment === ".." || !SEGMENT.test(segment)) {
      return `each '/'-separated part must be 1 to 255 letters, digits and . _ - + = @ ` +
        `(not '.' or '..')`;
    }
    if (segment.startsWith(PARTIAL)) return "a file being written is not a model";
  }
  return segments;
}

/**
 * Resolves `name` in `storageDir` (the calling container's storage folder): the real path must
 * lie inside the folder's real path and be a regular file whose GGUF header passes the
 * registry's checks.
 * Refused with Invalid, saying why.
 */
export async function resolveStorageModel(
  storageDir: string,
  name: string,
): Promise<StorageModelFile> {
  const segments = storageSegments(name);
  if (typeof segments === "string") throw notStorageFile(name, segments);
  const normal = segments.join("/");
  const root = await Deno.realPath(storageDir).catch(() => undefined);
  const real = root && await Deno.realPath(join(root, ...segments)).catch(() => undefined);
  if (!root || !real) throw notStorageFile(name, "no such file in the container's storage");
  if (!real.startsWith(root + SEP)) {
    throw notStorageFile(name, "it is a link that leads out of the container's storage");
  }
  const info = await Deno.stat(real);
  if (!info.isFile) throw notStorageFile(name, "it is not a file");
  const facts = { name: normal, path: real, size: info.size, mtimeMs: info.mtime?.getTime() ?? 0 };
  const problem = await headerCheck(facts);
  if (problem) throw notStorageFile(name, problem);
  return facts;
}

/** Header checks passed or failed, by path, size and modification time. */
const checked = new Map<string, string | undefined>();
/** Files whose check is kept: a header walk is quick, but not free for a real model. */
const MAX_CHECKED = 256;

/**
 * Why the file cannot be loaded, or undefined: the registry's checks of an uploaded file
 * (store/model_format.ts, store/gguf_metadata.ts with store/gguf_limits.ts), since a
 * container's file is as untrusted as an upload and must not reach llama.cpp crafted.
 */
async function headerCheck(file: StorageModelFile): Promise<string | undefined> {
  const key = `${file.size}:${file.mtimeMs}:${file.path}`;
  if (checked.has(key)) return checked.get(key);
  const head = new Uint8Array(GGUF_HEADER_BYTES);
  {
    using opened = await Deno.open(file.path, { read: true });
    let read = 0;
    while (read < head.length) {
      const n = await opened.read(head.subarray(read));
      if (n === null) break;
      read += n;
    }
  }
  let problem = headerProblem("gguf", head, file.size);
  if (!problem) {
    problem = await describeModelFile(file.path, "gguf").then(
      () => undefined,
      (error) => {
        if (error instanceof Invalid) return error.message;
        throw error;
      },
    );
  }
  if (checked.size >= MAX_CHECKED) checked.delete(checked.keys().next().value!);
  checked.set(key, problem);
  return problem;
}

/** The caller's load settings for a storage file, checked. */
function callerSettings(body: Record<string, unknown>) {
  const { max_context: context, n_gpu_layers: layers, chatTemplateHint: hint } = body;
  const counted = (value: unknown, what: string, min: number) => {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
      throw new Invalid(`'${what}' must be an integer of at least ${min}`);
    }
    return value;
  };
  if (hint !== undefined && hint !== null && typeof hint !== "string") {
    throw new Invalid("'chatTemplateHint' must be a string");
  }
  const contextSize = counted(context, "max_context", 0) || undefined;
  const gpuLayers = counted(layers, "n_gpu_layers", -1);
  return {
    ...(contextSize ? { contextSize } : {}),
    // -1 (llama.cpp's tools' "as many as fit"): left to the engine's default.
    ...(gpuLayers !== undefined && gpuLayers >= 0 ? { gpuLayers } : {}),
    ...(hint ? { chatTemplateHint: hint } : {}),
  };
}

/**
 * The file of `container`'s storage that a call's `body.model` names, with the caller's
 * `max_context`, `n_gpu_layers` and `chatTemplateHint`; `mmproj` is checked as the model is
 * (the engine has no projector support yet, as for the registry's vlm models: it is not
 * loaded).
 */
export async function callerFile(
  storageDir: string,
  container: string,
  body: Record<string, unknown>,
  kind: "llm" | "embed",
): Promise<CallerFile> {
  const file = await resolveStorageModel(storageDir, body.model as string);
  const settings = callerSettings(body);
  const mmproj = typeof body.mmproj === "string" && body.mmproj !== "";
  if (mmproj) await resolveStorageModel(storageDir, body.mmproj as string);
  return { container, ...file, kind: kind === "llm" && mmproj ? "vlm" : kind, ...settings };
}
