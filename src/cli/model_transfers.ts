/**
 * `edgenode models push|pull|cat`: moving a model's file into and out of a node, with progress.
 * A push or pull makes the record when it is missing, its kind read from the file (model_flags.ts
 * recordKind), keeps a ready model's file unless --force is given, and leaves no record it made
 * when it fails; a source that is not a URL is refused before any byte moves.
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { type NodeConnection, PREFIXES, type StoreClient } from "../sdk/clients.ts";
import { humanBytes } from "../sdk/human_units.ts";
import {
  type CreateModelRequest,
  type DownloadModelRequest,
  findModel,
  type Model,
  pullModel,
  removeUnready,
} from "../sdk/models.ts";
import { nodeError, nodeFetch } from "../sdk/node_errors.ts";
import { answer, clientError, exactly, reach } from "./cli_context.ts";
import { printJson, Progress } from "./output.ts";
import {
  alreadyReady,
  configOf,
  DEFAULT_VERSION,
  givenRecordFlags,
  type Kind,
} from "./model_flags.ts";
import { fetchGgufHead } from "./gguf_head.ts";
import { fileHead, recordKind } from "./model_file_kind.ts";
import { openUserFile } from "./user_files.ts";

/** What the transfer commands are given. */
export interface TransferInvocation {
  positionals: string[];
  values: Record<string, unknown>;
  connection: NodeConnection;
  store: StoreClient;
  json: boolean;
}

/** A file's bytes as a stream that reports its progress. */
async function fileWithProgress(path: string, label: string) {
  const file = await openUserFile(path);
  const total = (await file.stat()).size;
  const progress = new Progress(label);
  let done = 0;
  const body = file.readable.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        done += chunk.length;
        progress.update(done, total);
        controller.enqueue(chunk);
      },
      flush: () => progress.finish(),
    }),
  );
  return { body, total };
}

/** The model `id`, or an error that says how to create it. */
export async function requireModel(store: StoreClient, id: string): Promise<Model> {
  const model = await reach(findModel(store, id));
  if (model) return model;
  throw new Error(
    `model '${id}' does not exist; create it first: edgenode models add ${id} --kind llm|vlm|embed|onnx`,
  );
}

/** A push or pull into the ready `model` without --force: said, and nothing moved (exit 0). */
function keptReady(model: Model, said: string, json: boolean): number {
  if (json) {
    printJson(model);
    console.error(said);
  } else console.log(said);
  return 0;
}

/** Record flags given for a record that exists: said not to apply, with how to change them. */
function noteIgnored(id: string, before: Model | undefined, values: Record<string, unknown>) {
  const ignored = before ? givenRecordFlags(values) : [];
  if (ignored.length === 0) return;
  const [are, them] = ignored.length > 1 ? ["are", "them"] : ["is", "it"];
  console.error(
    `note: ${id} exists, so ${ignored.join(", ")} ${are} not applied; ` +
      `change ${them} with 'edgenode models set ${id}'`,
  );
}

/** The usage of `models push`. */
const PUSH_USAGE = "models push ID FILE [--sha256 HEX] [--kind K] [--version V] [--force]";

/**
 * `models push ID FILE`: uploads the file, making the record when it is missing (the kind read
 * from the file); a ready model keeps its file unless --force is given.
 */
export async function push({ positionals, values, store, json }: TransferInvocation) {
  const [id, path] = exactly(positionals, 2, PUSH_USAGE);
  const head = await fileHead(path); // A missing file is said before the node is asked.
  const before = await reach(findModel(store, id));
  if (before?.readyToUse && values.force !== true) {
    return keptReady(before, alreadyReady(before, "uploaded", `replace it with ${path}`), json);
  }
  noteIgnored(id, before, values);
  if (!before) {
    const names = [path.split(/[\\/]/).pop() ?? path];
    const kind = recordKind(values.kind as Kind | undefined, {
      source: path,
      names,
      hasProjector: false,
      head,
    });
    const version = (values.version as string | undefined) ?? DEFAULT_VERSION;
    await answer(
      store.POST("/models", { body: { id, kind, version, ...configOf(values, kind) } }),
      `adding ${id}`,
    );
  }
  try {
    const model = await upload(store, id, path, values.sha256 as string | undefined);
    if (json) printJson(model);
    else console.log(`pushed ${id}: ${humanBytes(model.totalSize)}, ready`);
    return 0;
  } catch (error) {
    if (!before) await removeUnready(store, id);
    throw error;
  }
}

/** Uploads the file at `path` into the record `id`, with progress; the ready model. */
async function upload(store: StoreClient, id: string, path: string, sha256: string | undefined) {
  const { body, total } = await fileWithProgress(path, `push ${id}`);
  return await answer(
    store.POST("/models/{id}/upload", {
      params: { path: { id }, query: { sha256 } },
      body: body as never,
      bodySerializer: (b: unknown) => b as BodyInit,
      headers: { "Content-Type": "application/octet-stream", "Content-Length": String(total) },
      duplex: "half",
    } as never),
    `uploading ${path}`,
  ) as Model;
}

/**
 * `models pull ID URL`: makes the record when it is missing (the kind read from the file's
 * head) and follows the download's events. A ready model is left alone unless --force is given.
 */
export async function pull({ positionals, values, store, json }: TransferInvocation) {
  const [id, url] = exactly(
    positionals,
    2,
    "models pull ID URL [--mmproj URL] [--sha256 HEX] [--kind K] [--version V] [--force]",
  );
  for (const [flag, given] of [["URL", url], ["--mmproj", values.mmproj]]) {
    if (typeof given === "string" && !/^https?:\/\//i.test(given)) {
      throw new ConfigError(
        `pull takes an http:// or https:// URL (${flag} is '${given}'); ` +
          `to send a file from this machine: edgenode models push ${id} FILE`,
      );
    }
  }
  const before = await reach(findModel(store, id));
  const force = values.force === true;
  if (before?.readyToUse && !force) {
    return keptReady(
      before,
      alreadyReady(before, "downloaded", `download it again from ${url}`),
      json,
    );
  }
  noteIgnored(id, before, values);
  const given = values.kind as Kind | undefined;
  const mmproj = values.mmproj as string | undefined;
  // The kind matters only to a record made now: an existing one keeps its own.
  const kind = before ? before.kind : recordKind(given, {
    source: url,
    names: [url, ...mmproj ? [mmproj] : []].map((u) => decodeURIComponent(new URL(u).pathname)),
    hasProjector: mmproj !== undefined,
    head: given || mmproj ? "unread" : await fetchGgufHead(url, fetch, "unread" as const),
  });
  const version = (values.version as string | undefined) ?? DEFAULT_VERSION;
  const body = {
    url,
    ...(mmproj ? { mmprojUrl: mmproj } : {}),
    ...(values.sha256 ? { sha256: values.sha256 as string } : {}),
    ...(force ? { force: true } : {}),
  };
  const record = { id, kind, version, ...configOf(values, kind) };
  return await download(store, record, body, { json, existed: before !== undefined });
}

/** How {@link download} reports. */
export interface DownloadReport {
  /** Print the record as JSON when done. */
  json: boolean;
  /** The record was there before: a cancel leaves it. */
  existed: boolean;
  /** Say "pulled" on standard error, keeping standard output for what follows (`run`). */
  quiet?: boolean;
}

/**
 * Downloads into record `record.id` (created from `record` when missing, the one rule every
 * pull follows) and draws the progress; Ctrl-C cancels it. Resolves to the exit code.
 */
export async function download(
  store: StoreClient,
  record: CreateModelRequest,
  body: DownloadModelRequest,
  report: DownloadReport,
): Promise<number> {
  const { id } = record;
  const cancel = new AbortController();
  const onInterrupt = () => cancel.abort();
  Deno.addSignalListener("SIGINT", onInterrupt);
  const bars = { model: new Progress(`pull ${id}`), mmproj: new Progress(`pull ${id} projector`) };
  let source: string | undefined;
  try {
    for await (const message of pullModel(store, record, body, cancel.signal)) {
      if ("done" in message) {
        bars.model.finish();
        const said = `pulled ${id}: ${humanBytes(message.model.totalSize)}, ready`;
        if (report.json) printJson(message.model);
        else if (report.quiet) console.error(said);
        else console.log(said);
        return 0;
      }
      if ("mmproj" in message) bars.mmproj.update(message.mmproj.size, message.mmproj.totalSize);
      else {
        const from = sourceName(message.source);
        if (from !== source && from !== undefined && !report.json) console.error(`\nfrom ${from}`);
        source = from;
        bars.model.update(message.size, message.totalSize);
      }
    }
    return 0;
  } catch (error) {
    if (cancel.signal.aborted) {
      console.error(
        report.existed
          ? `\npull of ${id} cancelled; the node discards the partial file`
          : `\npull of ${id} cancelled; the record it created is removed`,
      );
      return 130;
    }
    throw clientError(error);
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
  }
}

/** `models cat ID`: the model file to standard output; a reader that goes away ends it quietly. */
export async function cat({ positionals, connection }: TransferInvocation) {
  const [id] = exactly(positionals, 1, "models cat ID > FILE");
  const response = await reach(
    nodeFetch(connection.url)(
      `${connection.url}${PREFIXES.store}/models/${encodeURIComponent(id)}?alt=media`,
    ),
  );
  if (!response.ok || !response.body) {
    const body = await response.json().catch(() => undefined);
    throw clientError(nodeError(response, body, `reading ${id}'s file`));
  }
  try {
    await response.body.pipeTo(Deno.stdout.writable, { preventClose: true });
  } catch (error) {
    // `edgenode models cat ID | head -c 10`: head has what it wants; that is not a failure.
    if (error instanceof Deno.errors.BrokenPipe) return 0;
    throw error;
  }
  return 0;
}

/** Where a download's bytes come from, as the pull says it; undefined when the node did not say. */
function sourceName(source: "url" | { node: string } | undefined): string | undefined {
  if (source === undefined) return undefined;
  return source === "url" ? "the URL" : `node ${source.node}`;
}
