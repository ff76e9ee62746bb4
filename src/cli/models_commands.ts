/**
 * `edgenode models ...`: the model registry from a terminal, over the SDK's typed client.
 *
 * @module
 */
import type { components } from "../../gen/store/types.ts";
import { ConfigError } from "../config/config_error.ts";
import { storeClient } from "../sdk/clients.ts";
import { humanBytes } from "../sdk/human_units.ts";
import { ensureModel, followDownload } from "../sdk/models.ts";
import { answer, type Env, invocation, printJson, printTable, Progress } from "./cli_context.ts";

type Model = components["schemas"]["Model"];
type Kind = components["schemas"]["Kind"];

/** The help lines of these commands. */
export const MODELS_HELP = `  edgenode models ls [--kind K] [--ready]
  edgenode models show ID
  edgenode models add ID --kind llm|vlm|embed|onnx [--version V] [--ctx N] [--gpu-layers N]
                      [--template HINT] [--provider cpu|cuda|coreml|tensorrt]
  edgenode models push ID FILE [--sha256 HEX]          uploads the file, with progress
  edgenode models pull ID URL [--mmproj URL] [--sha256 HEX] [--kind K] [--version V]
      Downloads into the node (creating the record, kind llm by default), with progress;
      Ctrl-C cancels it.
  edgenode models set ID [--ctx N] [--gpu-layers N] [--template HINT] [--provider P]
  edgenode models rm ID
  edgenode models cat ID > FILE                        writes the model file to stdout`;

const CONFIG_OPTIONS = {
  ctx: { type: "string" },
  "gpu-layers": { type: "string" },
  template: { type: "string" },
  provider: { type: "string" },
} as const;

function integer(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) {
    throw new ConfigError(`--${flag} takes a whole number (got '${value}')`);
  }
  return Number(value);
}

/** The gguf or onnx part of a record from the flags (undefined when none is given). */
function configOf(values: Record<string, unknown>, kind: Kind | undefined) {
  const gguf = {
    initContextSize: integer(values.ctx as string | undefined, "ctx"),
    initGpuLayerSize: integer(values["gpu-layers"] as string | undefined, "gpu-layers"),
    chatTemplateHint: values.template as string | undefined,
  };
  const given = Object.fromEntries(Object.entries(gguf).filter(([, v]) => v !== undefined));
  const provider = values.provider as string | undefined;
  return {
    ...(Object.keys(given).length > 0 ? { gguf: given } : {}),
    ...(provider !== undefined || kind === "onnx"
      ? { onnx: { executionProvider: (provider ?? "cpu") as "cpu" } }
      : {}),
  };
}

function one(positionals: string[], count: number, usage: string): string[] {
  if (positionals.length !== count) throw new ConfigError(`usage: edgenode models ${usage}`);
  return positionals;
}

function row(model: Model): string[] {
  return [
    model.id,
    model.kind,
    model.version,
    humanBytes(model.totalSize),
    model.readyToUse ? "yes" : "no",
    new Date(model.createdAt).toISOString().slice(0, 16).replace("T", " "),
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

/** A file's bytes as a stream that reports its progress. */
async function fileWithProgress(path: string, label: string) {
  const file = await Deno.open(path).catch(() => {
    throw new ConfigError(`cannot read ${path}`);
  });
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

/** `edgenode models ARGS`. */
export async function modelsCommand(args: string[], env: Env): Promise<number> {
  const [sub, ...rest] = args;
  const options = {
    ...CONFIG_OPTIONS,
    kind: { type: "string" },
    ready: { type: "boolean" },
    version: { type: "string" },
    sha256: { type: "string" },
    mmproj: { type: "string" },
  } as const;
  const { values, positionals, connection, json } = invocation(rest, options, env);
  const store = storeClient(connection);
  const kind = values.kind as Kind | undefined;
  switch (sub) {
    case "ls": {
      one(positionals, 0, "ls [--kind K] [--ready]");
      const list = await answer(
        store.GET("/models", { params: { query: { kind, ready: values.ready } } }),
        "listing models",
      );
      if (json) printJson(list);
      else printTable(["ID", "KIND", "VERSION", "SIZE", "READY", "CREATED"], list.data.map(row));
      return 0;
    }
    case "show": {
      const [id] = one(positionals, 1, "show ID");
      const model = await answer(
        store.GET("/models/{id}", { params: { path: { id }, query: {} } }),
        `reading ${id}`,
      );
      if (json) printJson(model);
      else printModel(model as Model);
      return 0;
    }
    case "add": {
      const [id] = one(positionals, 1, "add ID --kind K [--version V] ...");
      if (!kind) throw new ConfigError("--kind is required: llm, vlm, embed or onnx");
      const model = await answer(
        store.POST("/models", {
          body: { id, kind, version: values.version ?? "1.0.0", ...configOf(values, kind) },
        }),
        `adding ${id}`,
      );
      const added = `added ${model.id} (${model.kind} ${model.version}, not ready`;
      if (json) printJson(model);
      else console.log(`${added}: push or pull its file)`);
      return 0;
    }
    case "set": {
      const [id] = one(
        positionals,
        1,
        "set ID [--ctx N] [--gpu-layers N] [--template H] [--provider P]",
      );
      const model = await answer(
        store.PUT("/models", { body: { id, action: "update", ...configOf(values, undefined) } }),
        `updating ${id}`,
      );
      if (json) printJson(model);
      else printModel(model);
      return 0;
    }
    case "rm": {
      const [id] = one(positionals, 1, "rm ID");
      const deleted = await answer(
        store.DELETE("/models/{id}", { params: { path: { id } } }),
        `deleting ${id}`,
      );
      if (json) printJson(deleted);
      else console.log(`deleted ${id}`);
      return 0;
    }
    case "push": {
      const [id, path] = one(positionals, 2, "push ID FILE [--sha256 HEX]");
      const { body, total } = await fileWithProgress(path, `push ${id}`);
      const model = await answer(
        store.POST("/models/{id}/upload", {
          params: { path: { id }, query: { sha256: values.sha256 } },
          body: body as never,
          bodySerializer: (b: unknown) => b as BodyInit,
          headers: { "Content-Type": "application/octet-stream", "Content-Length": String(total) },
          duplex: "half",
        } as never),
        `uploading ${path}`,
      ) as Model;
      if (json) printJson(model);
      else console.log(`pushed ${id}: ${humanBytes(model.totalSize)}, ready`);
      return 0;
    }
    case "pull":
      return await pull(positionals, values, store, json);
    case "cat": {
      const [id] = one(positionals, 1, "cat ID > FILE");
      const response = await fetch(
        `${connection.url}/ai/store/v1/models/${encodeURIComponent(id)}?alt=media`,
      );
      if (!response.ok || !response.body) {
        const message = (await response.json().catch(() => ({})))?.error?.message;
        throw new Error(`reading ${id}'s file: ${response.status} ${message ?? ""}`);
      }
      await response.body.pipeTo(Deno.stdout.writable, { preventClose: true });
      return 0;
    }
    default:
      throw new ConfigError(
        `unknown models command '${sub ?? ""}'; try ls, show, add, push, pull, set, rm or cat`,
      );
  }
}

/** `models pull`: creates the record when needed and follows the download's events. */
async function pull(
  positionals: string[],
  values: Record<string, unknown>,
  store: ReturnType<typeof storeClient>,
  json: boolean,
): Promise<number> {
  const [id, url] = one(positionals, 2, "pull ID URL [--mmproj URL] [--sha256 HEX]");
  const kind = (values.kind ?? (values.mmproj ? "vlm" : "llm")) as Kind;
  const version = (values.version as string) ?? "1.0.0";
  await ensureModel(store, { id, kind, version, ...configOf(values, kind) });
  const cancel = new AbortController();
  const onInterrupt = () => cancel.abort();
  Deno.addSignalListener("SIGINT", onInterrupt);
  const bars = { model: new Progress(`pull ${id}`), mmproj: new Progress(`pull ${id} projector`) };
  try {
    const body = {
      url,
      ...(values.mmproj ? { mmprojUrl: values.mmproj as string } : {}),
      ...(values.sha256 ? { sha256: values.sha256 as string } : {}),
    };
    for await (const message of followDownload(store, id, body, cancel.signal)) {
      if ("done" in message) {
        bars.model.finish();
        if (json) printJson(message.model);
        else console.log(`pulled ${id}: ${humanBytes(message.model.totalSize)}, ready`);
        return 0;
      }
      if ("mmproj" in message) bars.mmproj.update(message.mmproj.size, message.mmproj.totalSize);
      else bars.model.update(message.size, message.totalSize);
    }
    return 0;
  } catch (error) {
    if (cancel.signal.aborted) {
      console.error(`\npull of ${id} cancelled; the node discards the partial file`);
      return 130;
    }
    throw error;
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
  }
}
