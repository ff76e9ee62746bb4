/**
 * A GGUF file that a container's `context.ml` call names in its own storage (the reference's
 * mILM passes `cache/<id>.gguf`): the name is checked and resolved by the storage's own rules
 * (sandbox/storage_names.ts: `/`-separated segments, no `..`, no absolute path, no link on the
 * way or in its place, inside the container's `<storage>/files/`), its real path checked once
 * more to lie inside that folder, and its GGUF header by the registry's checks of an upload. A
 * container names only its own storage: never another container's, nor the node's data.
 *
 * @module
 */
import { sep as SEP } from "node:path";
import { Invalid } from "../../errors/mod.ts";
import type { CallerFile } from "../../inference/caller_files.ts";
import { describeModelFile } from "../../store/gguf_metadata.ts";
import { GGUF_HEADER_BYTES, headerProblem } from "../../store/model_format.ts";
import {
  storageFilePath,
  StorageNameError,
  storageNameSegments,
} from "../sandbox/storage_names.ts";

/** A resolved file of a container's storage. */
export interface StorageModelFile {
  /** The name, as the call gave it (a checked storage name). */
  name: string;
  /** Its real path, inside the storage's files folder. */
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

/** Whether `name` is a storage name that has an entry in the container's storage. */
export async function inStorage(storageDir: string, name: string): Promise<boolean> {
  try {
    storageNameSegments(name);
  } catch {
    return false;
  }
  return await Deno.lstat(`${storageDir}/files/${name}`).then(() => true, () => false);
}

/**
 * Resolves `name` in `storageDir` (the calling container's storage folder, mcm/images/
 * bundle_files.ts `storagePath`): a regular file inside its `files/` folder whose GGUF header
 * passes the registry's checks. Refused with Invalid, saying why.
 */
export async function resolveStorageModel(
  storageDir: string,
  name: string,
): Promise<StorageModelFile> {
  let path;
  try {
    path = storageFilePath(storageDir, name);
  } catch (error) {
    if (error instanceof StorageNameError) throw notStorageFile(name, error.message);
    // The storage's files folder is not there: the container never stored a file.
    if (error instanceof Deno.errors.NotFound) {
      throw notStorageFile(name, "no such file in the container's storage");
    }
    throw error;
  }
  const root = await Deno.realPath(`${storageDir}/files`);
  const real = await Deno.realPath(path).catch(() => undefined);
  if (!real) throw notStorageFile(name, "no such file in the container's storage");
  // storage_names.ts refused links on the way; the real path is checked all the same.
  if (!real.startsWith(root + SEP)) {
    throw notStorageFile(name, "it leads out of the container's storage");
  }
  const info = await Deno.stat(real);
  if (!info.isFile) throw notStorageFile(name, "it is not a file");
  const facts = { name, path: real, size: info.size, mtimeMs: info.mtime?.getTime() ?? 0 };
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
