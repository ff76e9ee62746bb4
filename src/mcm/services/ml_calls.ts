/**
 * The node's side of a microservice's `context.ml` (spec/mcm.yaml, ContainerCall `chat` and
 * `embed`): the request is the inference API's body, checked by the same schema, and runs on
 * the node's InferenceService, its answer shaped by the same code as the API's
 * (openai_format.ts), so a microservice relays byte for byte what a client of the API gets.
 *
 * A microservice names only models of this node's registry: an id, or the path of a model's
 * file in the node's models folder, which is resolved (symlinks followed) and mapped back to
 * its id; any other path is refused, whether or not it exists. The caller's `max_context`,
 * `n_gpu_layers`, `chatTemplateHint` and `mmproj` are ignored: the registry's record is the
 * source of truth for how a model loads (the reference's mILM itself passes the record's
 * values), and one loaded model serves the API and every microservice alike.
 *
 * @module
 */
import { resolve, sep as SEP } from "node:path";
import {
  ChatCompletionRequestSchema,
  EmbeddingsRequestSchema,
} from "../../../gen/inference/validators.ts";
import { Invalid, NotFound, Unavailable } from "../../errors/mod.ts";
import { validate } from "../../streams/mod.ts";
import { containerCaller } from "../../inference/caller_usage.ts";
import type { InferenceCaller, InferenceService } from "../../inference/inference_service.ts";
import { chatCompletion, chatJob, chunkMaker } from "../../inference/openai_format.ts";
import { storedFileName } from "../../store/model_files.ts";
import { StreamingAnswer } from "./container_calls.ts";

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

/** Runs `context.ml` calls on the node's models. */
export class MlCalls {
  readonly #inference: InferenceService | undefined;
  readonly #modelsDir: string | undefined;

  /**
   * `inference` is undefined when inference is off (every call is then 503); `modelsDir` is
   * the registry's models folder, a real path (without it models are named by id only).
   */
  constructor(inference: InferenceService | undefined, modelsDir: string | undefined) {
    this.#inference = inference;
    this.#modelsDir = modelsDir;
  }

  /**
   * A chat completion of container `container` (of `client`): streamed as SSE messages (events),
   * or one answer.
   */
  async chat(request: unknown, container?: string, client?: string): Promise<StreamingAnswer> {
    const { service, body, id, detached } = await this.#prepare(request);
    const caller = callerOf(container, client, detached);
    const checked = validate(ChatCompletionRequestSchema, { ...body, model: id }, "body");
    const job = chatJob(checked);
    const completionId = `chatcmpl-${crypto.randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    return new StreamingAnswer(async (emit, signal): Promise<MlEvent> => {
      if (!checked.stream) {
        const { result } = await service.chat(id, job, { signal, caller });
        const data = JSON.stringify(chatCompletion(id, completionId, created, result));
        return { status: 200, headers: JSON_HEADERS, data, done: true };
      }
      const chunks = chunkMaker(id, completionId, created);
      const send = (message: unknown) =>
        emit(
          {
            status: 200,
            headers: SSE_HEADERS,
            data: `data: ${JSON.stringify(message)}\n\n`,
            done: false,
          } satisfies MlEvent,
        );
      const { result } = await service.chat(id, job, {
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
    const { service, body, id, detached } = await this.#prepare(request);
    const caller = callerOf(container, client, detached);
    const checked = validate(EmbeddingsRequestSchema, { ...body, model: id }, "body");
    const input = typeof checked.input === "string" ? [checked.input] : checked.input;
    return new StreamingAnswer(async (_emit, signal): Promise<MlEvent> => {
      const { vectors } = await service.embed(id, input, signal, caller);
      return { status: 200, headers: JSON_HEADERS, data: JSON.stringify(vectors), done: true };
    });
  }

  /** The service, the request's body and the registry id its `model` names. */
  async #prepare(request: unknown) {
    const service = this.#inference;
    if (!service) throw new Unavailable(INFERENCE_OFF);
    if (typeof request !== "object" || request === null || Array.isArray(request)) {
      throw new Invalid("pass the request's options as an object");
    }
    const { [DETACHED_FIELD]: detached, ...body } = request as Record<string, unknown>;
    return {
      service,
      body,
      id: await this.#modelId(service, body.model),
      detached: detached === true,
    };
  }

  /** The registry id `model` names: an id, or the path of a model's file (see the module). */
  async #modelId(service: InferenceService, model: unknown): Promise<string> {
    if (typeof model !== "string" || model === "") {
      throw new Invalid(
        "pass 'model': the registry id of one of this node's models, or the path of its file",
      );
    }
    if (!/[\\/]/.test(model) && model !== "." && model !== "..") {
      service.check(model);
      return model;
    }
    const root = this.#modelsDir;
    if (!root) throw notInRegistry(model);
    // Relative paths are the models folder's. Whatever it is, nothing outside the folder is
    // told apart: a missing file and one of the host's answer alike.
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
