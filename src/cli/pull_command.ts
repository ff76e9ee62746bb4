/**
 * `edgenode pull NAME`: a model into the node by what it is called, as `ollama pull` does. NAME
 * is a model already in the registry, a Hugging Face repository `hf.co/{user}/{repo}[:{quant}]`
 * or a URL (model_names.ts resolves it); the record is created once, by the same download every
 * pull uses (model_transfers.ts), and the node fetches the files with its progress drawn here.
 * `edgenode run NAME` pulls the same way before it chats ({@link ensurePulled}).
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { type StoreClient, storeClient } from "../sdk/clients.ts";
import { humanBytes } from "../sdk/human_units.ts";
import { findModel, type Model } from "../sdk/models.ts";
import { type Env, exactly, invocation, reach } from "./cli_context.ts";
import type { Command } from "./command.ts";
import { DEFAULT_VERSION, type Kind } from "./model_flags.ts";
import {
  expectedHfId,
  kindOfDownload,
  type ModelDownload,
  parseModelName,
  resolveHfName,
  urlDownload,
} from "./model_names.ts";
import { download } from "./model_transfers.ts";
import { printJson } from "./output.ts";

/** The help lines of this command. */
const HELP = `  edgenode pull NAME [--kind llm|vlm|embed] [--revision REV] [--force]
      Downloads a model into the node by name: hf.co/USER/REPO[:QUANT] (a Hugging Face GGUF
      repository: the QUANT asked for, else Q4_K_M, else Q4_0, else the smallest file, with
      its mmproj projector when it has one; the Hub is $HF_ENDPOINT or https://huggingface.co),
      or a URL of a .gguf file. The record's id is the user, '--', the repository's name without
      -GGUF and the quantisation, lower case (hf.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M is
      qwen--qwen2.5-0.5b-instruct-q4_k_m); a URL's is its file's name. The kind is vlm with a
      projector, embed when the names say "embed" or the file's header does (an encoder
      architecture, or pooling declared), else llm; --kind overrides it. A ready model is left
      alone unless --force is given; a URL whose id a ready model has is refused without
      --force. --revision takes a branch, tag or commit of the repository (default main).
      'edgenode run NAME' pulls the same way first.`;

/** How a name that is neither on the node nor resolvable is refused (`pull` and `run`). */
export function notOnTheNode(name: string, url: string): Error {
  return new Error(
    `model '${name}' is not on the node at ${url}; 'edgenode models ls' lists its models, ` +
      `'edgenode pull hf.co/USER/REPO[:QUANT]' downloads one from Hugging Face, ` +
      `'edgenode models pull ${name} URL' one from a URL`,
  );
}

/** What NAME names, when it is to be downloaded; undefined for a registry id. */
export async function downloadOf(
  name: string,
  env: Env,
  revision?: string,
): Promise<ModelDownload | undefined> {
  const parsed = parseModelName(name);
  if (revision !== undefined && parsed.source !== "hf") {
    throw new ConfigError("--revision is for a Hugging Face name: hf.co/USER/REPO[:QUANT]");
  }
  if (parsed.source === "id") return undefined;
  if (parsed.source === "url") return urlDownload(parsed.url);
  return await resolveHfName(parsed, { env, revision });
}

/** A pull of a model that is ready already: said, and nothing downloaded. */
function alreadyReady(model: Model, options: PullOptions): { id: string; code: number } {
  if (!options.quiet) {
    if (options.json) printJson(model);
    else console.log(`${model.id} is ready (${humanBytes(model.totalSize)}); nothing to download`);
  }
  return { id: model.id, code: 0 };
}

/** A URL pull whose id is taken by a ready record: refused, with the ways on. */
function readyUnderUrlId(id: string, url: string): Error {
  return new ConfigError(
    `a model '${id}' is on the node already; a URL's id is its file's name, so it may be ` +
      `another file: 'edgenode pull ${url} --force' replaces it, ` +
      `'edgenode models pull OTHER-ID ${url}' keeps both`,
  );
}

/** What a pull does beyond the name. */
export interface PullOptions {
  json: boolean;
  force?: boolean;
  kind?: Kind;
  /** The repository's branch, tag or commit (hf.co names; default main). */
  revision?: string;
  /** Report on standard error only (`run` keeps standard output for the answer). */
  quiet?: boolean;
}

/**
 * The registry id NAME names, its files downloaded into the node first when they are not
 * there (or always, with `force`); `code` is the pull's exit code (0 when nothing was needed).
 */
export async function ensurePulled(
  name: string,
  store: StoreClient,
  nodeUrl: string,
  env: Env,
  options: PullOptions,
): Promise<{ id: string; code: number }> {
  // A model pulled before is found without the Hub: it runs offline, as edge nodes often are.
  const expected = options.force || options.revision
    ? undefined
    : expectedHfId(parseModelName(name));
  const ready = expected && await reach(findModel(store, expected));
  if (ready && ready.readyToUse) return alreadyReady(ready, options);
  const wanted = await downloadOf(name, env, options.revision);
  const id = wanted?.id ?? name;
  const before = await reach(findModel(store, id));
  if (!wanted) {
    if (!before) throw notOnTheNode(name, nodeUrl);
    if (!before.readyToUse) {
      throw new Error(
        `model '${id}' has no file yet; give it one: edgenode models pull ${id} URL, ` +
          `or edgenode models push ${id} FILE`,
      );
    }
    if (options.force) {
      throw new ConfigError(`--force needs a source: edgenode models pull ${id} URL --force`);
    }
  }
  if (before?.readyToUse && !options.force) {
    // A URL's id is only its file's name: many files share one, so a ready record of that id
    // may hold another file's weights. Said, rather than answered "ready" with the wrong model.
    if (parseModelName(name).source === "url") throw readyUnderUrlId(id, name);
    return alreadyReady(before, options);
  }
  if (!options.json) console.error(`pulling ${id} from ${wanted!.from}`);
  // The kind matters only to a record made now: an existing one keeps its own.
  const kind = options.kind ?? before?.kind ?? await kindOfDownload(wanted!);
  const record = { id, kind, version: DEFAULT_VERSION };
  const body = {
    url: wanted!.url,
    ...(wanted!.mmprojUrl ? { mmprojUrl: wanted!.mmprojUrl } : {}),
    ...(options.force ? { force: true } : {}),
  };
  const code = await download(store, record, body, {
    json: options.json,
    existed: before !== undefined,
    quiet: options.quiet,
  });
  return { id, code };
}

/** `edgenode pull NAME`. */
async function pull(args: string[], env: Env): Promise<number> {
  const { values, positionals, connection, json } = invocation(args, {
    kind: { type: "string" },
    force: { type: "boolean" },
    revision: { type: "string" },
  }, env);
  const [name] = exactly(
    positionals,
    1,
    "pull NAME [--kind K] [--revision REV] [--force] (edgenode pull --help)",
  );
  const kind = values.kind as Kind | undefined;
  if (kind !== undefined && !["llm", "vlm", "embed"].includes(kind)) {
    throw new ConfigError(`--kind takes llm, vlm or embed (got '${kind}')`);
  }
  const store = storeClient(connection);
  const revision = values.revision as string | undefined;
  const options = { json, force: values.force === true, kind, revision };
  return (await ensurePulled(name, store, connection.url, env, options)).code;
}

/** `edgenode pull`. */
export const PULL_COMMAND: Command = { name: "pull", help: HELP, run: pull };
