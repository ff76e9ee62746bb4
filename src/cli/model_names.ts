/**
 * What `edgenode pull NAME` and `edgenode run NAME` name, resolved: a model of the node's
 * registry, a Hugging Face repository (`hf.co/{user}/{repo}[:{quant}]`, as Ollama takes it), or
 * a file's URL. A repository's GGUF files are listed through the Hub's API
 * (`GET {HF_ENDPOINT}/api/models/{user}/{repo}`, its `siblings`), and one is chosen: the
 * quantisation asked for, else Q4_K_M, else Q4_0, else the smallest; with its `mmproj` file
 * when the repository has one. The record's id and kind are derived here, in one place (see
 * {@link hfModelId} and {@link kindOf}).
 *
 * @example
 * ```ts
 * import { parseModelName } from "./model_names.ts";
 *
 * parseModelName("hf.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M");
 * // { source: "hf", user: "Qwen", repo: "Qwen2.5-0.5B-Instruct-GGUF", quant: "Q4_K_M" }
 * ```
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { embedsByHead, fetchGgufHead, readUpTo, SOURCE_TIMEOUT_MS } from "./gguf_head.ts";
import type { Kind } from "./model_flags.ts";

/** The Hub's address when HF_ENDPOINT is not set (the Hub's own clients' convention). */
export const HF_DEFAULT_ENDPOINT = "https://huggingface.co";

/** The most of the Hub's answer read: a repository's listing is a few kB, a large one 1 MB. */
const API_BODY_LIMIT = 4 * 1024 * 1024;

/** The quantisations chosen when none is asked for, best first; then the smallest file. */
const DEFAULT_QUANTS = ["Q4_K_M", "Q4_0"];

/** A name as written: a registry id, a Hugging Face repository, or a URL. */
export type ModelName =
  | { source: "id"; id: string }
  | { source: "hf"; user: string; repo: string; quant?: string }
  | { source: "url"; url: string };

/** What a name resolves to when its files are to be downloaded. */
export interface ModelDownload {
  /** The registry id the record gets. */
  id: string;
  /** The kind its names give ({@link kindOfDownload} reads the file's header too). */
  kind: Kind;
  url: string;
  mmprojUrl?: string;
  /** Where it was found, in words ("test/tiny, tiny-Q4_K_M.gguf"). */
  from: string;
}

/** How a name is resolved: the environment (HF_ENDPOINT) and the fetch that reaches the Hub. */
export interface Resolving {
  env: (name: string) => string | undefined;
  /** A branch, tag or commit of the repository (default main). */
  revision?: string;
  fetch?: typeof fetch;
}

/** How a Hugging Face repository is written: without a scheme (with one, it is a URL). */
const HF_NAME = /^(?:hf\.co|huggingface\.co)\/([^/:\s]+)\/([^/:\s]+?)(?::([^/:\s]+))?\/?$/i;

/**
 * Reads a name as written; a malformed Hugging Face name is a ConfigError. An http(s) address is
 * a URL, even on the Hub (`https://huggingface.co/U/R/resolve/main/x.gguf` is a file's URL).
 */
export function parseModelName(name: string): ModelName {
  const hf = HF_NAME.exec(name);
  if (hf) return { source: "hf", user: hf[1], repo: hf[2], ...(hf[3] ? { quant: hf[3] } : {}) };
  if (/^(?:hf\.co|huggingface\.co)\//i.test(name)) {
    throw new ConfigError(`'${name}' is not a Hugging Face name: write hf.co/USER/REPO[:QUANT]`);
  }
  if (/^https?:\/\//i.test(name)) return { source: "url", url: name };
  return { source: "id", id: name };
}

/** A registry id made of `text`: lower case, only letters, digits, '.', '_' and '-'. */
export function idOf(text: string): string {
  return text.toLowerCase().replaceAll(/[^a-z0-9._-]+/g, "-").replaceAll(/\.{2,}/g, ".")
    .replace(/^[.-]+/, "").replace(/[.-]+$/, "").slice(0, 255);
}

/** The quantisation a GGUF file's name says (Q4_K_M, IQ4_XS, F16, ...), upper case. */
export function quantOf(file: string): string | undefined {
  const base = file.split("/").pop()!.replace(/\.gguf$/i, "");
  const found = /(?:^|[-_.])(I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32)(?=$|[-_.])/i.exec(base);
  return found?.[1].toUpperCase();
}

/**
 * The id of a repository's file: the Hub user, `--`, the repository's name without a `-GGUF`
 * ending, then the file's quantisation (else the file's name), lower case:
 * `Qwen/Qwen2.5-0.5B-Instruct-GGUF` with `...-q4_k_m.gguf` is
 * `qwen--qwen2.5-0.5b-instruct-q4_k_m`. The user is part of it because many users publish the
 * same model (bartowski's and unsloth's quants of one repository name are different files).
 */
export function hfModelId(user: string, repo: string, file: string): string {
  return repositoryId(user, repo, quantOf(file) ?? file.split("/").pop()!.replace(/\.gguf$/i, ""));
}

/** `{user}--{repo without -GGUF}-{quant}` as a registry id. */
function repositoryId(user: string, repo: string, quant: string): string {
  return idOf(`${idOf(user)}--${repo.replace(/[-_.]gguf$/i, "")}-${quant}`);
}

/**
 * The id a Hugging Face name with a quant gets without asking the Hub (the id of the file whose
 * quantisation is the one asked, the usual case), so a model pulled before runs offline.
 */
export function expectedHfId(name: ModelName): string | undefined {
  if (name.source !== "hf" || !name.quant) return undefined;
  return repositoryId(name.user, name.repo, name.quant);
}

/** The kind of a model file: vlm with a projector, embed when its names say so, else llm. */
export function kindOf(names: string[], hasProjector: boolean): Kind {
  if (hasProjector) return "vlm";
  return names.some((name) => /embed/i.test(name)) ? "embed" : "llm";
}

/**
 * The kind of a download's record: the one its names give (vlm with a projector, embed by
 * name), and embed too when an llm's file header says so (an encoder's architecture, or pooling
 * declared: gguf_head.ts), read with one Range request. Asked only when a record is created.
 */
export async function kindOfDownload(
  download: ModelDownload,
  fetcher: typeof fetch = fetch,
): Promise<Kind> {
  if (download.kind !== "llm") return download.kind;
  return embedsByHead(await fetchGgufHead(download.url, fetcher)) ? "embed" : "llm";
}

/** A file of a repository as the Hub lists it (`size` with `?blobs=true`). */
interface Sibling {
  rfilename: string;
  size?: number;
}

/** The Hub's JSON answer, read up to a limit; undefined when it is not JSON or too long. */
async function apiBody(response: Response): Promise<{ siblings?: unknown } | undefined> {
  if (!response.body) return undefined;
  const { bytes, more } = await readUpTo(response.body, API_BODY_LIMIT);
  if (more) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

/** `names`, at most 20 of them, then how many more. */
export function listed(names: string[]): string {
  const shown = names.slice(0, 20).join(", ");
  return names.length > 20 ? `${shown} and ${names.length - 20} more` : shown;
}

/** The repository's files, from the Hub's API; an unknown repository is a clear error. */
async function siblings(
  endpoint: string,
  user: string,
  repo: string,
  revision: string | undefined,
  fetcher: typeof fetch,
) {
  const url = `${endpoint}/api/models/${encodeURIComponent(user)}/${encodeURIComponent(repo)}` +
    (revision ? `/revision/${encodeURIComponent(revision)}` : "");
  let response: Response;
  let body;
  try {
    response = await fetcher(`${url}?blobs=true`, {
      signal: AbortSignal.timeout(SOURCE_TIMEOUT_MS),
    });
    body = await apiBody(response);
  } catch (error) {
    throw new Error(
      `cannot reach the Hugging Face Hub at ${endpoint}: ${(error as Error).message}`,
    );
  }
  if (response.status === 401 || response.status === 404) {
    throw new Error(
      `no repository ${user}/${repo}${revision ? ` at revision ${revision}` : ""} on ` +
        `${endpoint} (${response.status}; a private or gated ` +
        "one cannot be pulled by name: give the node a URL with 'edgenode models pull ID URL')",
    );
  }
  if (!response.ok || !Array.isArray(body?.siblings)) {
    throw new Error(`the Hub at ${endpoint} answered ${response.status} for ${user}/${repo}`);
  }
  return (body.siblings as unknown[]).filter(isSibling);
}

/**
 * Whether the Hub's entry is a file name safe to put in a URL's path: a string, not empty, not
 * absolute, no empty, `.`, `..` or `\\` segment (a hostile or broken Hub's names are left out).
 */
function isSibling(entry: unknown): entry is Sibling {
  const name = (entry as Sibling | null)?.rfilename;
  if (typeof name !== "string" || name === "" || name.startsWith("/")) return false;
  return name.split("/").every((part) =>
    part !== "" && part !== "." && part !== ".." &&
    !part.includes("\\")
  );
}

/** A part of a split model, or a file of the vocabulary alone: never chosen as the smallest. */
const NOT_A_MODEL = /-\d{5}-of-\d{5}\.gguf$|vocab/i;

/**
 * The file of `files` chosen for `quant` (asked, else the defaults, else the smallest whole
 * model). A name that merely contains a quant counts only when no file's quantisation is one
 * sought exactly (`x-IQ4_K_M.gguf` is not taken for Q4_K_M when there is a Q4_0 file).
 */
function chooseFile(files: Sibling[], quant: string | undefined, where: string): Sibling {
  const exactly = (q: string) => files.find((f) => quantOf(f.rfilename) === q.toUpperCase());
  const containing = (q: string) =>
    files.find((f) => f.rfilename.toLowerCase().includes(q.toLowerCase()));
  if (quant) {
    const found = exactly(quant) ?? containing(quant);
    if (found) return found;
    const there = files.map((f) => quantOf(f.rfilename) ?? f.rfilename);
    throw new ConfigError(`${where} has no ${quant} file; it has: ${listed(there)}`);
  }
  for (const find of [exactly, containing]) {
    for (const q of DEFAULT_QUANTS) {
      const found = find(q);
      if (found) return found;
    }
  }
  const whole = files.filter((f) => !NOT_A_MODEL.test(f.rfilename.split("/").pop()!));
  return (whole.length > 0 ? whole : files)
    .reduce((a, b) => (b.size ?? Infinity) < (a.size ?? Infinity) ? b : a);
}

/** A repository file's download URL on the Hub. */
function resolveUrl(endpoint: string, user: string, repo: string, revision: string, file: string) {
  const path = file.split("/").map(encodeURIComponent).join("/");
  return `${endpoint}/${encodeURIComponent(user)}/${encodeURIComponent(repo)}/resolve/` +
    `${encodeURIComponent(revision)}/${path}`;
}

/** A Hugging Face name resolved through the Hub's API to the files to download. */
export async function resolveHfName(
  name: Extract<ModelName, { source: "hf" }>,
  resolving: Resolving,
): Promise<ModelDownload> {
  const endpoint = (resolving.env("HF_ENDPOINT") || HF_DEFAULT_ENDPOINT).replace(/\/+$/, "");
  const { user, repo } = name;
  const where = `${user}/${repo}`;
  const { revision } = resolving;
  const all = await siblings(endpoint, user, repo, revision, resolving.fetch ?? fetch);
  const at = (file: string) => resolveUrl(endpoint, user, repo, revision ?? "main", file);
  const ggufs = all.filter((f) => /\.gguf$/i.test(f.rfilename));
  const projectors = ggufs.filter((f) => /mmproj/i.test(f.rfilename));
  const models = ggufs.filter((f) => !/mmproj/i.test(f.rfilename));
  if (models.length === 0) {
    throw new Error(
      `${where} has no GGUF model file (its files: ${
        listed(all.map((f) => f.rfilename)) || "none"
      }); edgenode runs GGUF models: look for a repository whose name ends in -GGUF`,
    );
  }
  const file = chooseFile(models, name.quant, where);
  if (/-\d{5}-of-\d{5}\.gguf$/i.test(file.rfilename)) {
    throw new Error(`${where}'s ${file.rfilename} is one part of a split model, not supported`);
  }
  // A projector of the same precision as the model is not given by the Hub: prefer F16's.
  const projector = projectors.find((f) => quantOf(f.rfilename) === "F16") ?? projectors[0];
  return {
    id: hfModelId(user, repo, file.rfilename),
    kind: kindOf([repo, file.rfilename], projector !== undefined),
    url: at(file.rfilename),
    ...(projector ? { mmprojUrl: at(projector.rfilename) } : {}),
    from: `${where}, ${file.rfilename}${projector ? ` with ${projector.rfilename}` : ""}`,
  };
}

/** A URL's download: the id is its file's name without `.gguf`, lower case. */
export function urlDownload(url: string): ModelDownload {
  const file = decodeURIComponent(new URL(url).pathname.split("/").pop() ?? "");
  const id = idOf(file.replace(/\.gguf$/i, ""));
  if (!id) throw new ConfigError(`'${url}' names no file to take the model's id from`);
  return { id, kind: kindOf([file], false), url, from: url };
}
