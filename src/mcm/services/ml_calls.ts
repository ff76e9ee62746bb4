/**
 * The node's side of a microservice's `context.ml` (spec/mcm.yaml, ContainerCall `chat` and
 * `embed`): the request is the inference API's body, checked by the same schema, and runs on
 * the node's InferenceService, its answer shaped by the same code as the API's
 * (openai_format.ts), so a microservice relays byte for byte what a client of the API gets.
 *
 * A microservice names a model of this node's registry, or a GGUF file of its own storage:
 * - a name without '/' is a registry id; when the registry has no such model, a file of that
 *   name at the root of the caller's storage (`tiny.gguf`);
 * - an absolute path names a model's file in the node's models folder, which is resolved
 *   (symlinks followed) and mapped back to its id; any other absolute path is refused, whether
 *   or not it exists;
 * - a relative path with '/' names a file of the caller's storage (`cache/<id>.gguf`, as the
 *   reference's mILM does), checked and resolved by the storage's own rules (storage_model.ts):
 *   never another container's storage nor the node's data.
 *
 * For a registry model the caller's `max_context`, `n_gpu_layers`, `chatTemplateHint` and
 * `mmproj` are ignored: the record is the source of truth for how a model loads (the
 * reference's mILM itself passes the record's values), and one loaded model serves the API and
 * every microservice alike. For a storage file they apply (inference/caller_files.ts): it is
 * loaded read-only from the storage with them, its memory estimated and counted as a registry
 * model's, its file's GGUF header checked as any untrusted file (store/gguf_limits.ts, and a
 * throwaway probe load when inference.probeLoads).
 *
 * @module
 */
import { isAbsolute, resolve, sep as SEP } from "node:path";
import {
  ChatCompletionRequestSchema,
  EmbeddingsRequestSchema,
} from "../../../gen/inference/validators.ts";
import { Invalid, NotFound, Unavailable } from "../../errors/mod.ts";
import { validate } from "../../streams/mod.ts";
import { containerCaller } from "../../inference/caller_usage.ts";
import type {
  CallerFile,
  InferenceCaller,
  InferenceService,
} from "../../inference/inference_service.ts";
import { chatCompletion, chatJob, chunkMaker } from "../../inference/openai_format.ts";
import { storedFileName } from "../../store/model_files.ts";
import { StreamingAnswer } from "./container_calls.ts";
import { callerFile, inStorage, notStorageFile } from "./storage_model.ts";

/** What `success` gets: an HTTP-like answer, or one message of a stream (`done: false`). */
export interface MlEvent {
  status: number;
  headers: Record<string, string>;
  data: string;
  done: boolean;
}

const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = { "content-type": "text/event-stream" };

/** The message of a call while inference is off. */
const INFERENCE_OFF =
  "inference is off on this node (its config's inference.enabled is false): context.ml " +
  "requires edgeEngine with ml capability enabled";

function notInRegistry(model: string): Invalid {
  const named = JSON.stringify(model.length > 300 ? `${model.slice(0, 300)}…` : model);
  return new Invalid(
    `model ${named} is not a model of this node's registry: name it by its registry id ` +
      "(the registry's GET /models lists them) or by the path of its file in the node's " +
      "models folder",
  );
}

/**
 * The field the sandbox's `context.ml` sets on a call made outside any request (ml_context.ts):
 * the node takes it off the body and charges the call to the container's detached budget.
 */
export const DETACHED_FIELD = "edgenodeDetached";

/** The container a call came from when the node does not say (one caller for them all). */
const UNNAMED = "unnamed";

/** The inference caller of a container's call (caller_usage.ts). */
function callerOf(
  container: string | undefined,
  client: string | undefined,
  detached: boolean,
): InferenceCaller {
  return {
    id: containerCaller(container ?? UNNAMED),
    client: client ?? container ?? UNNAMED,
    priority: false,
    detached,
  };
}

/** What a call runs on: a registry id or a storage file, and the name its answer carries. */
interface MlTarget {
  target: string | CallerFile;
  name: string;
}

/** Runs `context.ml` calls on the node's models. */
export class MlCalls {
  readonly #inference: InferenceService | undefined;
  readonly #modelsDir: string | undefined;
  readonly #storageOf: ((container: string) => string) | undefined;

  /**
   * `inference` is undefined when inference is off (every call is then 503); `modelsDir` is
   * the registry's models folder, a real path (without it models are named by id only);
   * `storageOf` gives a container's storage folder (without it, no storage file is named).
   */
  constructor(
    inference: InferenceService | undefined,
    modelsDir: string | undefined,
    storageOf?: (container: string) => string,
  ) {
    this.#inference = inference;
    this.#modelsDir = modelsDir;
    this.#storageOf = storageOf;
  }

  /**
   * A chat completion of container `container` (of `client`): streamed as SSE messages (events),
   * or one answer.
   */
  async chat(request: unknown, container?: string, client?: string): Promise<StreamingAnswer> {
    const { service, body, target, name, caller } = await this.#prepare(request, "llm", {
      container,
      client,
    });
    const checked = validate(ChatCompletionRequestSchema, { ...body, model: name }, "body");
    const job = chatJob(checked);
    const completionId = `chatcmpl-${crypto.randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    return new StreamingAnswer(async (emit, signal): Promise<MlEvent> => {
      if (!checked.stream) {
        const { result } = await service.chat(target, job, { signal, caller });
        const data = JSON.stringify(chatCompletion(name, completionId, created, result));
        return { status: 200, headers: JSON_HEADERS, data, done: true };
      }
      const chunks = chunkMaker(name, completionId, created);
      const send = (message: unknown) =>
        emit(
          {
            status: 200,
            headers: SSE_HEADERS,
            data: `data: ${JSON.stringify(message)}\n\n`,
            done: false,
          } satisfies MlEvent,
        );
      const { result } = await service.chat(target, job, {
        signal,
        caller,
        onStart: () => send(chunks.start()),
        onText: (text) => send(chunks.text(text)),
      });
      send(chunks.end(result));
      return { status: 200, headers: SSE_HEADERS, data: "data: [DONE]\n\n", done: true };
    });
  }

  /** Embeddings: `data` is the JSON text of the vectors' array, one per input. */
  async embed(request: unknown, container?: string, client?: string): Promise<StreamingAnswer> {
    const { service, body, target, name, caller } = await this.#prepare(request, "embed", {
      container,
      client,
    });
    const checked = validate(EmbeddingsRequestSchema, { ...body, model: name }, "body");
    const input = typeof checked.input === "string" ? [checked.input] : checked.input;
    return new StreamingAnswer(async (_emit, signal): Promise<MlEvent> => {
      const { vectors } = await service.embed(target, input, signal, caller);
      return { status: 200, headers: JSON_HEADERS, data: JSON.stringify(vectors), done: true };
    });
  }

  /** The engine, the request's body, what its `model` names and whose call it is (callerOf). */
  async #prepare(
    request: unknown,
    kind: "llm" | "embed",
    { container, client }: { container?: string; client?: string },
  ) {
    const service = this.#inference;
    if (!service) throw new Unavailable(INFERENCE_OFF);
    if (typeof request !== "object" || request === null || Array.isArray(request)) {
      throw new Invalid("pass the request's options as an object");
    }
    const { [DETACHED_FIELD]: detached, ...body } = request as Record<string, unknown>;
    return {
      service,
      body,
      ...await this.#target(service, body, kind, container),
      caller: callerOf(container, client, detached === true),
    };
  }

  /** A registry id or a file of the caller's storage (see the module). */
  async #target(
    service: InferenceService,
    body: Record<string, unknown>,
    kind: "llm" | "embed",
    container: string | undefined,
  ): Promise<MlTarget> {
    const model = body.model;
    if (typeof model !== "string" || model === "") {
      throw new Invalid(
        "pass 'model': the registry id of one of this node's models, the path of its file, or " +
          "the name of a GGUF file in this container's storage",
      );
    }
    if (isAbsolute(model) || /\\/.test(model)) {
      const id = await this.#modelId(service, model);
      return { target: id, name: id };
    }
    if (!model.includes("/") && model !== "." && model !== "..") {
      try {
        service.check(model);
        return { target: model, name: model };
      } catch (error) {
        // Not a registry id: a file of that name in the caller's storage, else the registry's 404.
        if (!(error instanceof NotFound)) throw error;
        const storageDir = container && this.#storageOf?.(container);
        if (!storageDir || !await inStorage(storageDir, model)) throw error;
        return { target: await this.#storageFile(service, body, kind, container), name: model };
      }
    }
    return { target: await this.#storageFile(service, body, kind, container), name: model };
  }

  /**
   * The file of the caller's storage that `body.model` names, with the caller's settings; a
   * file that no longer resolves is unloaded if it was loaded (it was deleted or moved).
   */
  async #storageFile(
    service: InferenceService,
    body: Record<string, unknown>,
    kind: "llm" | "embed",
    container: string | undefined,
  ): Promise<CallerFile> {
    const name = body.model as string;
    const storageDir = container && this.#storageOf?.(container);
    if (!container || !storageDir) throw notStorageFile(name, "the caller has no storage");
    try {
      return await callerFile(storageDir, container, body, kind);
    } catch (error) {
      await service.unloadFile(container, name).catch(() => {});
      throw error;
    }
  }

  /** The registry id an absolute path names: a model's file in the models folder. */
  async #modelId(service: InferenceService, model: string): Promise<string> {
    const root = this.#modelsDir;
    if (!root) throw notInRegistry(model);
    // Whatever it is, nothing outside the folder is told apart: a missing file and one of the
    // host's answer alike.
    const real = await Deno.realPath(resolve(root, model)).catch(() => undefined);
    if (!real?.startsWith(root + SEP)) throw notInRegistry(model);
    const [id, file, ...deeper] = real.slice(root.length + 1).split(SEP);
    if (!file || deeper.length > 0) throw notInRegistry(model);
    let record;
    try {
      record = service.check(id);
    } catch (error) {
      // The file of a record being deleted, or a folder left behind.
      if (error instanceof NotFound) throw notInRegistry(model);
      throw error;
    }
    if (file !== storedFileName(record, "model")) throw notInRegistry(model);
    return id;
  }
}
