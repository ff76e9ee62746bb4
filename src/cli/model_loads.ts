/**
 * `edgenode models load|unload ID`: a model into the node's inference engine and out of it,
 * through the registry's `PUT /models {id, action}` (spec/store.yaml; the API key's call, the
 * one `edgenode run` and the dashboard use too). The load's event stream is drawn as `models
 * pull` draws its download: a bar redrawn on a terminal, a line every 10% otherwise.
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import type { StoreClient } from "../sdk/clients.ts";
import { installingEngineOf } from "../sdk/load_progress.ts";
import { findModel } from "../sdk/models.ts";
import { errorMessage, nodeError } from "../sdk/node_errors.ts";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { answer, clientError, exactly, reach } from "./cli_context.ts";
import type { TransferInvocation } from "./model_transfers.ts";
import { printJson } from "./output.ts";
import { listModels } from "./ps_command.ts";

/** The largest context a record takes (spec/store.yaml: gguf.initContextSize). */
const MAX_CONTEXT = 16_777_216;

/** The messages of the load's stream: progress, the loaded state, or an error. */
interface LoadMessage {
  progress?: string;
  loaded?: boolean;
  error?: { code?: unknown; message?: unknown };
}

/** A load's progress on standard error: redrawn on a terminal, every 10% otherwise. */
class LoadProgress {
  readonly #label: string;
  readonly #terminal = Deno.stderr.isTerminal();
  #lastTenth = -1;
  #installing = false;

  constructor(id: string) {
    this.#label = `load ${id}`;
  }

  #draw(text: string): void {
    Deno.stderr.writeSync(new TextEncoder().encode(`\r\x1b[2K${text}`));
  }

  /** The engine is being installed first, in the node's words. */
  installing(words: string): void {
    if (this.#terminal) this.#draw(`${words}…`);
    else if (!this.#installing) console.error(`${words}…`);
    this.#installing = true;
  }

  /** The weights are `percent` loaded. */
  loaded(percent: number): void {
    if (this.#terminal) {
      const bar = "#".repeat(Math.round(percent / 5)).padEnd(20);
      return this.#draw(`${this.#label} [${bar}] ${percent}%`);
    }
    const tenth = Math.floor(percent / 10);
    if (tenth <= this.#lastTenth) return;
    this.#lastTenth = tenth;
    console.error(`${this.#label} ${tenth * 10}%`);
  }

  /** Ends the bar's line. */
  finish(): void {
    if (this.#terminal) Deno.stderr.writeSync(new TextEncoder().encode("\n"));
  }
}

/** The JSON messages of an event stream. */
async function* messages(body: ReadableStream<Uint8Array>): AsyncGenerator<LoadMessage> {
  const parsed = body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
  for await (const event of parsed) yield JSON.parse(event.data) as LoadMessage;
}

/** `--context N` as a number, if given. */
function contextOf(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const context = Number(value);
  if (!/^\d+$/.test(String(value)) || context < 1 || context > MAX_CONTEXT) {
    throw new ConfigError(`--context takes a number of tokens from 1 to ${MAX_CONTEXT}`);
  }
  return context;
}

/** A change of a record's context for one load, and how to undo it. */
interface ContextChange {
  /** Sets the new context and unloads the model, so that the load uses it. */
  apply(): Promise<void>;
  /**
   * Puts the old context back (0, the default, when there was none), unloads what may have
   * been loaded with the new one and loads the model again if it was loaded before: the node is
   * left as it was. Best effort: the node may have gone.
   */
  restore(): Promise<void>;
}

/**
 * What setting model `id`'s context to `context` takes (what every later load uses): undefined
 * when the record has it already, otherwise the change to apply before the load, which unloads
 * the model so that the load uses it (a loaded model is otherwise kept as is).
 */
async function contextChange(
  { store, connection }: TransferInvocation,
  id: string,
  context: number,
): Promise<ContextChange | undefined> {
  const before = await reach(findModel(store, id));
  if (!before) throw new Error(`loading ${id}: 404 model '${id}' does not exist`);
  const old = before.gguf?.initContextSize;
  if (old === context) return undefined;
  const models = await listModels(connection.url).catch(() => undefined);
  const wasLoaded = models?.some((model) => model.id === id && model.loaded === true) ?? false;
  const update = (initContextSize: number) =>
    answer(
      store.PUT("/models", { body: { id, action: "update", gguf: { initContextSize } } }),
      `setting ${id}'s context`,
    );
  const unloadIt = () =>
    answer(store.PUT("/models", { body: { id, action: "unload" } }), `unloading ${id}`);
  const restore = async () => {
    await update(old ?? 0).catch(() => {});
    await unloadIt().catch(() => {});
    if (wasLoaded) await loadModel(store, id).catch(() => {});
  };
  return {
    apply: async () => {
      await update(context);
      await unloadIt();
    },
    restore,
  };
}

/**
 * Loads `id` with `change` applied first. A failure anywhere, in the change or the load, restores
 * what was (ContextChange.restore), and so does Ctrl-C: the node finishes a load its client
 * left, so the restore waits for the load's end; a second Ctrl-C leaves at once.
 */
async function loadChanged(
  store: StoreClient,
  id: string,
  change: ContextChange,
): Promise<LoadMessage | "interrupted"> {
  let interrupted = false;
  const onInterrupt = () => {
    if (interrupted) Deno.exit(130);
    interrupted = true;
    console.error(
      `\nedgenode: interrupted; ${id}'s old context is put back once the node's load ends ` +
        "(Ctrl-C again leaves it as it is)",
    );
  };
  Deno.addSignalListener("SIGINT", onInterrupt);
  try {
    await change.apply();
    const loaded = interrupted ? undefined : await loadModel(store, id, new LoadProgress(id));
    if (loaded && !interrupted) return loaded;
    await change.restore();
    return "interrupted";
  } catch (error) {
    // A context that cannot be loaded is not left for the next use to fail on.
    await change.restore();
    if (interrupted) return "interrupted";
    throw error;
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
  }
}

/** `models load ID [--context N]`: loads it, drawing the progress; exit 0 once loaded. */
export async function load(invocation: TransferInvocation) {
  const { positionals, values, store, json } = invocation;
  const [id] = exactly(positionals, 1, "models load ID [--context N]");
  const context = contextOf(values.context);
  const change = context === undefined ? undefined : await contextChange(invocation, id, context);
  const loaded = change
    ? await loadChanged(store, id, change)
    : await loadModel(store, id, new LoadProgress(id));
  if (loaded === "interrupted") return 130;
  if (json) printJson(loaded);
  else console.log(`loaded ${id}`);
  return 0;
}

/** Loads `id` through the registry's load stream, drawing `progress` if given; the loaded state. */
async function loadModel(
  store: StoreClient,
  id: string,
  progress?: LoadProgress,
): Promise<LoadMessage> {
  const { response, error } = await reach(
    store.PUT("/models", { body: { id, action: "load" }, parseAs: "stream" }),
  );
  if (!response.ok || !response.body) {
    // openapi-fetch has read a refusal's body already, whatever parseAs says.
    const body = error ?? await response.json().catch(() => undefined);
    throw clientError(nodeError(response, body, `loading ${id}`));
  }
  try {
    for await (const message of messages(response.body)) {
      if (message.error) {
        const code = typeof message.error.code === "number" ? `${message.error.code} ` : "";
        throw new Error(`loading ${id}: ${code}${errorMessage(message)}`);
      }
      if (message.loaded) return message;
      const installing = installingEngineOf(message.progress);
      const percent = /(\d+)%/.exec(message.progress ?? "")?.[1];
      if (installing) progress?.installing(installing);
      else if (percent !== undefined) progress?.loaded(Number(percent));
    }
    throw new Error(`loading ${id}: the node ended the stream before the model was loaded`);
  } finally {
    progress?.finish();
  }
}

/** `models unload ID`: frees its memory; a model that was not loaded is not an error. */
export async function unload({ positionals, store, json }: TransferInvocation) {
  const [id] = exactly(positionals, 1, "models unload ID");
  const state = await answer(
    store.PUT("/models", { body: { id, action: "unload" } }),
    `unloading ${id}`,
  );
  if (json) printJson(state);
  else console.log(`unloaded ${id}`);
  return 0;
}
