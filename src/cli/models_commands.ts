/**
 * `edgenode models ...`: the model registry from a terminal, over the SDK's typed client.
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { type StoreClient, storeClient } from "../sdk/clients.ts";
import { humanBytes, humanTime } from "../sdk/human_units.ts";
import { findModel, type Model } from "../sdk/models.ts";
import {
  answer,
  type Env,
  exactly,
  invocation,
  reach,
  type Subcommands,
  subcommandsOf,
} from "./cli_context.ts";
import { printJson, printTable } from "./output.ts";
import type { Command } from "./command.ts";
import {
  CONFIG_OPTIONS,
  CONFIG_USAGE,
  configOf,
  DEFAULT_VERSION,
  type Kind,
  kindNeeded,
} from "./model_flags.ts";
import { load, unload } from "./model_loads.ts";
import { cat, pull, push, requireModel, type TransferInvocation } from "./model_transfers.ts";

/** The help lines of these commands. */
const HELP = `  edgenode models ls [--kind K] [--ready]
  edgenode models show ID
  edgenode models add ID --kind llm|vlm|embed|onnx [--version V] [--ctx N] [--gpu-layers N]
                      [--template HINT] [--provider cpu|cuda|coreml|tensorrt]
      Creates a record without a file (version 1.0.0 unless given); an existing one is changed
      with 'set'. Push or pull its file next, or let them create the record.
  edgenode models push ID FILE [--sha256 HEX] [--kind K] [--version V] [--force]
      Uploads the file, with progress.
  edgenode models pull ID URL [--mmproj URL] [--sha256 HEX] [--kind K] [--version V] [--force]
      Downloads into the node, with progress; Ctrl-C cancels it. With --sha256 the node first
      fetches the file from a node of its account on the LAN that holds it (inference.mesh),
      and uses the URL when none does; the progress says where the bytes come from.
      push and pull create a missing record (version 1.0.0 unless given, with the settings
      flags of 'add'), its kind read from the file: vlm with --mmproj, embed when the names
      or the GGUF header say so, else llm; --kind overrides it, and a file that is not GGUF
      (an ONNX model) needs it. A record they created goes when they fail. A ready model
      keeps its file unless --force is given.
  edgenode models set ID [--version V] [--kind K] [--ctx N] [--gpu-layers N] [--template HINT]
                      [--provider P]                   changes only the given fields
  edgenode models rm ID
  edgenode models cat ID > FILE                        writes the model file to stdout
  edgenode models load ID [--context N]
      Loads the model into the node's inference engine, with progress (it also loads on first
      use). --context N sets its record's context size in tokens (as 'models set ID --ctx N',
      kept unless the load fails) and loads it again if it was loaded with another. A load
      that fails or is interrupted (Ctrl-C) leaves the old context, and a model that was
      loaded is loaded again with it. 507 when memory cannot hold it.
  edgenode models unload ID                            frees the memory a loaded model holds`;

function row(model: Model): string[] {
  return [
    model.id,
    model.kind,
    model.version,
    humanBytes(model.totalSize),
    model.readyToUse ? "yes" : "no",
    humanTime(model.createdAt),
  ];
}

function printModel(model: Model): void {
  const facts: [string, unknown][] = [
    ["id", model.id],
    ["kind", model.kind],
    ["version", model.version],
    ["ready", model.readyToUse ? "yes" : "no"],
    ["size", humanBytes(model.totalSize)],
    ["sha256", model.sha256],
    ["created", new Date(model.createdAt).toISOString()],
    ["gguf", model.gguf && JSON.stringify(model.gguf)],
    ["onnx", model.onnx && JSON.stringify(model.onnx)],
    ["architecture", model.ggufInfo?.architecture],
    ["parameters", model.ggufInfo?.parameterCount],
    ["context length", model.ggufInfo?.contextLength],
    ["quantization", model.ggufInfo?.quantization],
    ["chat template", model.suggestedChatTemplateHint],
    ["projector", model.mmproj && humanBytes(model.mmproj.totalSize)],
  ];
  for (const [name, value] of facts) {
    if (value !== undefined) console.log(`${`${name}:`.padEnd(16)}${value}`);
  }
}

/** `models add`: creates a record; an existing one is refused, never reset. */
async function add({ positionals, values, store, json }: TransferInvocation) {
  const [id] = exactly(positionals, 1, `models add ID --kind K [--version V] ${CONFIG_USAGE}`);
  const kind = values.kind as Kind | undefined;
  if (!kind) throw kindNeeded(`models add makes a record without a file`);
  const before = await reach(findModel(store, id));
  if (before) {
    throw new Error(
      `model '${id}' already exists (${before.kind} ${before.version}, ` +
        `${before.readyToUse ? "ready" : "not ready"}); change it with ` +
        `'edgenode models set ${id} --version V ...', or remove it first with 'edgenode models rm ${id}'`,
    );
  }
  const version = (values.version as string | undefined) ?? DEFAULT_VERSION;
  const model = await answer(
    store.POST("/models", { body: { id, kind, version, ...configOf(values, kind) } }),
    `adding ${id}`,
  );
  if (json) printJson(model);
  else {
    console.log(
      `added ${model.id} (${model.kind} ${model.version}, not ready: push or pull its file)`,
    );
  }
  return 0;
}

/**
 * `models set`: changes only the given fields. The settings alone are a PUT; a new version or
 * kind is the create-or-update POST, with the record's own values for what was not given.
 */
async function set({ positionals, values, store, json }: TransferInvocation) {
  const [id] = exactly(positionals, 1, `models set ID [--version V] [--kind K] ${CONFIG_USAGE}`);
  const model = await changed(id, values, store);
  if (json) printJson(model);
  else printModel(model);
  return 0;
}

/** The record `id` with the given fields changed, as the node answers it. */
async function changed(id: string, values: Record<string, unknown>, store: StoreClient) {
  const kind = values.kind as Kind | undefined;
  const version = values.version as string | undefined;
  const config = configOf(values, undefined);
  if (kind === undefined && version === undefined && Object.keys(config).length === 0) {
    throw new ConfigError(
      `nothing to change: give at least one of --version V, --kind K, ${
        CONFIG_USAGE.replaceAll(/[[\]]/g, "").replaceAll(" --", ", --")
      }`,
    );
  }
  if (kind === undefined && version === undefined) {
    // An update answers the Model (load and unload, other actions, answer otherwise).
    return await answer(
      store.PUT("/models", { body: { id, action: "update", ...config } }),
      `updating ${id}`,
    ) as Model;
  }
  const before = await requireModel(store, id);
  const newKind = kind !== undefined && kind !== before.kind ? kind : undefined;
  return await answer(
    store.POST("/models", {
      body: {
        id,
        kind: kind ?? before.kind,
        version: version ?? before.version,
        ...configOf(values, newKind),
      },
    }),
    `updating ${id}`,
  );
}

/** A command's flags, as node:util's parseArgs takes them. */
type Options = Record<string, { type: "string" | "boolean" }>;

/** The flags of a record's identity: its kind and version. */
const RECORD_OPTIONS = { kind: { type: "string" }, version: { type: "string" } } as const;

/** The flags of push and pull: those of a record they may create, a checksum, --force. */
const TRANSFER_OPTIONS = {
  ...RECORD_OPTIONS,
  ...CONFIG_OPTIONS,
  sha256: { type: "string" },
  force: { type: "boolean" },
} as const;

/**
 * A models command taking `options` (and the global flags; any other flag is refused, with the
 * nearest one it takes): its arguments parsed, the node's registry client beside them.
 */
function models(
  run: (invocation: TransferInvocation) => Promise<number>,
  options: Options = {},
): (args: string[], env: Env) => Promise<number> {
  return (args, env) => {
    const { values, positionals, connection, json } = invocation(args, options, env);
    return run({ positionals, values, connection, store: storeClient(connection), json });
  };
}

async function list({ positionals, values, store, json }: TransferInvocation) {
  exactly(positionals, 0, "models ls [--kind K] [--ready]");
  const kind = values.kind as Kind | undefined;
  const ready = values.ready as boolean | undefined;
  const list = await answer(
    store.GET("/models", { params: { query: { kind, ready } } }),
    "listing models",
  );
  if (json) printJson(list);
  else printTable(["ID", "KIND", "VERSION", "SIZE", "READY", "CREATED"], list.data.map(row));
  return 0;
}

async function show({ positionals, store, json }: TransferInvocation) {
  const [id] = exactly(positionals, 1, "models show ID");
  const model = await answer(
    store.GET("/models/{id}", { params: { path: { id }, query: {} } }),
    `reading ${id}`,
  );
  if (json) printJson(model);
  else printModel(model as Model);
  return 0;
}

async function remove({ positionals, store, json }: TransferInvocation) {
  const [id] = exactly(positionals, 1, "models rm ID");
  const deleted = await answer(
    store.DELETE("/models/{id}", { params: { path: { id } } }),
    `deleting ${id}`,
  );
  if (json) printJson(deleted);
  else console.log(`deleted ${id}`);
  return 0;
}

const SUBCOMMANDS: Subcommands = new Map([
  ["ls", models(list, { kind: { type: "string" }, ready: { type: "boolean" } })],
  ["show", models(show)],
  ["add", models(add, { ...RECORD_OPTIONS, ...CONFIG_OPTIONS })],
  ["push", models(push, TRANSFER_OPTIONS)],
  ["pull", models(pull, { ...TRANSFER_OPTIONS, mmproj: { type: "string" } })],
  ["set", models(set, { ...RECORD_OPTIONS, ...CONFIG_OPTIONS })],
  ["rm", models(remove)],
  ["cat", models(cat)],
  ["load", models(load, { context: { type: "string" } })],
  ["unload", models(unload)],
]);

/** `edgenode models ARGS`. */
export const MODELS_COMMAND: Command = {
  name: "models",
  help: HELP,
  run: subcommandsOf(
    "models",
    SUBCOMMANDS,
    `usage: edgenode models ${[...SUBCOMMANDS.keys()].join("|")} ... ('edgenode models --help')`,
  ),
};
