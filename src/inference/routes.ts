/**
 * HTTP handlers of the OpenAI-compatible API, one per operation of spec/inference.yaml.
 *
 * @module
 */
import { inferenceRoutes } from "../../gen/inference/routes.ts";
import { type DomainError, Invalid, TooLarge, Unavailable, Unprocessable } from "../errors/mod.ts";
import { type ErrorFormat, type ErrorPayload, jsonResponse } from "../http/errors.ts";
import { json, raw } from "../http/reply.ts";
import type { Handlers } from "../http/routes.ts";
import type { RequestContext } from "../http/pipeline.ts";
import { eventStream, runStream, sseResponse } from "../http/sse.ts";
import { type InferenceCaller, KEY_HOLDER_CALLER } from "./caller_usage.ts";
import type { InferenceService } from "./inference_service.ts";
import { modelLoading } from "./load_messages.ts";
import { type Mistake, servedByHeaders } from "./mesh_forward.ts";
import type { MeshRouter } from "./mesh_router.ts";
import { CHAT_KINDS, EMBED_KINDS } from "./mesh_ranking.ts";
import {
  chatCompletion,
  chatJob,
  chunkMaker,
  embeddingsAnswer,
  modelEntry,
  openAiErrorBody,
} from "./openai_format.ts";

export { inferenceRoutes };

/** Errors in OpenAI's shape: `{ error: { message, type, param, code } }`. */
export const openAiError: ErrorFormat = (status, message, headers, details) =>
  jsonResponse(openAiErrorBody(status, message, details), status, headers);

/** An error inside a stream that has started, in OpenAI's shape. */
function openAiStreamError({ status, body, details }: ErrorPayload): unknown {
  return openAiErrorBody(status, body.message, details);
}

/** A fresh completion id, as OpenAI and the reference write them. */
function completionId(): string {
  return `chatcmpl-${crypto.randomUUID()}`;
}

/** Who is calling, as the service's `authorize` found (service.ts). */
export interface InferenceAuth {
  /** The id of the node of this account that routed the request here. */
  peer?: string;
  /** Requires the API key (for an operation open without it, such as a listing's option). */
  requireKey(): void;
}

/** A node that routed a request here: a client of its own in the fair queue, not the key holder. */
export function peerCaller(nodeId: string): InferenceCaller {
  const id = `node:${nodeId}`;
  return { id, client: id, priority: false, detached: false };
}

/** The Retry-After of a request no node of the mesh could serve (each was busy, down or gone). */
const RETRY_AFTER_S = 2;

/** Whether this node holds `model`, of one of `kinds`, whatever its state. */
function holds(service: InferenceService, model: string, kinds: readonly string[]): boolean {
  try {
    return kinds.includes(service.check(model).kind);
  } catch {
    return false;
  }
}

/** A peer's refusal of the request itself, as the same error here (OpenAI's shape, its words). */
function mistakeError({ status, message, param, nodeId }: Mistake): DomainError {
  const details = { field: param };
  const words = `node ${nodeId}: ${message}`;
  if (status === 413) return new TooLarge(words, details);
  if (status === 422) return new Unprocessable(words, details);
  return new Invalid(words, details);
}

/** The handlers of every inference operation; `mesh` routes what this node cannot serve now. */
export function inferenceHandlers(
  service: InferenceService,
  mesh?: MeshRouter,
): Handlers<typeof inferenceRoutes, InferenceAuth> {
  const loading = modelLoading(service);
  const servedHere = () => mesh ? servedByHeaders(mesh.nodeId) : undefined;
  /**
   * The mesh's answer for a request this node cannot serve now (never one routed here); null
   * when it serves it itself (it can, no node answered, or routing is off).
   */
  const routed = async (
    model: string,
    kinds: readonly string[],
    body: unknown,
    auth: InferenceAuth,
    context: RequestContext,
  ): Promise<Response | null> => {
    if (!mesh || auth.peer !== undefined || service.canServeNow(model, kinds)) return null;
    const result = await mesh.forward(model, kinds, {
      method: "POST",
      path: context.path + context.search,
      body: JSON.stringify(body),
      signal: context.request.signal,
    });
    if (result.served) return result.response;
    if (result.mistake) throw mistakeError(result.mistake);
    // Candidates there were, and none answered: this node's own answer would be a 404 for a
    // model it does not hold, which says nothing true. One it holds waits in its own queue.
    if (result.failures.length > 0 && !holds(service, model, kinds)) {
      throw new Unavailable(
        `no node of the mesh could serve model '${model}' now: ${result.failures.join("; ")}`,
        { retryAfterSeconds: RETRY_AFTER_S },
      );
    }
    return null;
  };
  return {
    listModels: ({ query, auth }) => {
      if (query.scope === "mesh") {
        auth.requireKey();
        const models = mesh ? mesh.models() : Promise.resolve([]);
        return models.then((data) => json(200, { object: "list" as const, data }));
      }
      return json(200, {
        object: "list" as const,
        data: service.list().map(({ model, slot }) => modelEntry(model, slot)),
      });
    },
    getModel: ({ params }) => {
      const model = service.check(params.id);
      return json(200, modelEntry(model, service.loaded(params.id)));
    },
    loadModel: ({ body }) =>
      raw(sseResponse(loading.load(body.model), `loading model '${body.model}'`), [200]),
    unloadModel: async ({ query }) => json(200, await loading.unload(query.modelId)),
    createChatCompletion: async ({ body, request, auth, context }) => {
      const forwarded = await routed(body.model, CHAT_KINDS, body, auth, context);
      if (forwarded) return raw(forwarded, [200]);
      const caller = auth.peer !== undefined ? peerCaller(auth.peer) : KEY_HOLDER_CALLER;
      const job = chatJob(body);
      const id = completionId();
      const created = Math.floor(Date.now() / 1000);
      if (!body.stream) {
        const { result } = await service.chat(body.model, job, { signal: request.signal, caller });
        return json(200, chatCompletion(body.model, id, created, result), servedHere());
      }
      const chunks = chunkMaker(body.model, id, created);
      const abort = new AbortController();
      const stream = eventStream(() => abort.abort());
      const started = Promise.withResolvers<void>();
      // Until the stream starts, a client that goes away (while its request waits for its turn)
      // is heard through the request's signal; after, through the stream's cancel, the one
      // place a streamed answer's end is heard, so the listener goes once the stream starts.
      const leave = () => abort.abort();
      request.signal.addEventListener("abort", leave, { once: true });
      const chat = service.chat(body.model, job, {
        signal: abort.signal,
        caller,
        onStart: () => {
          stream.send(chunks.start());
          started.resolve();
        },
        onText: (text) => stream.send(chunks.text(text)),
      });
      // Until generation starts, a failure (unknown model, no memory, a full queue) is the
      // answer's status; after it, the stream's last message.
      await Promise.race([started.promise, chat]).finally(() =>
        request.signal.removeEventListener("abort", leave)
      );
      runStream(stream, async () => {
        const { result } = await chat;
        stream.send(chunks.end(result));
      }, { onError: openAiStreamError, what: "chat completion", last: "[DONE]" });
      for (const [name, value] of Object.entries(servedHere() ?? {})) {
        stream.response.headers.set(name, value);
      }
      return raw(stream.response, [200]);
    },
    createEmbeddings: async ({ body, request, auth, context }) => {
      const forwarded = await routed(body.model, EMBED_KINDS, body, auth, context);
      if (forwarded) return raw(forwarded, [200]);
      const caller = auth.peer !== undefined ? peerCaller(auth.peer) : KEY_HOLDER_CALLER;
      const input = typeof body.input === "string" ? [body.input] : body.input;
      const result = await service.embed(body.model, input, request.signal, caller);
      return json(
        200,
        embeddingsAnswer(body.model, result, body.encoding_format ?? "float"),
        servedHere(),
      );
    },
  };
}
