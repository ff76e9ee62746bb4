/**
 * HTTP handlers of the OpenAI-compatible API, one per operation of spec/inference.yaml.
 *
 * @module
 */
import { inferenceRoutes } from "../../gen/inference/routes.ts";
import { DomainError } from "../errors/mod.ts";
import { HTTP_STATUS_OF } from "../http/error_statuses.ts";
import { type ErrorFormat, jsonResponse } from "../http/errors.ts";
import { json, raw } from "../http/reply.ts";
import type { Handlers } from "../http/routes.ts";
import type { ModelLoading } from "../store/routes.ts";
import { eventStream, sseResponse } from "../http/sse.ts";
import type { InferenceService } from "./inference_service.ts";
import { loadMessages } from "./load_messages.ts";
import {
  chatCompletion,
  chatJob,
  chunkMaker,
  embeddingsAnswer,
  modelEntry,
} from "./openai_format.ts";

export { inferenceRoutes };

/** OpenAI's error `type` for a status. */
function errorType(status: number): string {
  if (status === 401 || status === 403) return "authentication_error";
  if (status === 429) return "rate_limit_error";
  if (status === 507) return "insufficient_memory";
  return status < 500 ? "invalid_request_error" : "server_error";
}

/** Errors in OpenAI's shape: `{ error: { message, type, param, code } }`. */
export const openAiError: ErrorFormat = (status, message, headers) =>
  jsonResponse(
    {
      error: {
        message,
        type: errorType(status),
        // The field a validation message names ("field 'top_p' must be ..."), as OpenAI says.
        param: /field '([^']+)'/.exec(message)?.[1] ?? null,
        code: status === 404 && message.includes("not found in the model registry")
          ? "model_not_found"
          : status === 400 && /the model's context of \d+ tokens/.test(message)
          ? "context_length_exceeded"
          : null,
      },
    },
    status,
    headers,
  );

/** An error inside a stream that has started, in OpenAI's shape. */
export function streamError(error: unknown): unknown {
  if (error instanceof DomainError) {
    const status = HTTP_STATUS_OF[error.kind];
    return { error: { message: error.message, type: errorType(status), param: null, code: null } };
  }
  console.error("inference failed:", error);
  const message = `the completion failed: ${(error as Error)?.message ?? error}`;
  return { error: { message, type: "server_error", param: null, code: null } };
}

/** The registry's `PUT /models` load and unload actions (src/store/routes.ts). */
export function modelLoading(service: InferenceService): ModelLoading {
  return {
    load(id) {
      service.check(id);
      return sseResponse(loadMessages(service, id));
    },
    async unload(id) {
      const model = service.check(id);
      await service.unload(id);
      return { id, object: "model", kind: model.kind, loaded: false };
    },
  };
}

/** A fresh completion id, as OpenAI and the reference write them. */
function completionId(): string {
  return `chatcmpl-${crypto.randomUUID()}`;
}

/** The handlers of every inference operation. */
export function inferenceHandlers(service: InferenceService): Handlers<typeof inferenceRoutes> {
  const loading = modelLoading(service);
  return {
    listModels: () =>
      json(200, {
        object: "list" as const,
        data: service.list().map(({ model, slot }) => modelEntry(model, slot)),
      }),
    getModel: ({ params }) => {
      const model = service.check(params.id);
      return json(200, modelEntry(model, service.loaded(params.id)));
    },
    loadModel: ({ body }) => raw(loading.load(body.model), [200]),
    unloadModel: async ({ query }) => json(200, await loading.unload(query.modelId)),
    createChatCompletion: async ({ body, request }) => {
      const job = chatJob(body);
      const id = completionId();
      const created = Math.floor(Date.now() / 1000);
      if (!body.stream) {
        const { result } = await service.chat(body.model, job, { signal: request.signal });
        return json(200, chatCompletion(body.model, id, created, result));
      }
      const chunks = chunkMaker(body.model, id, created);
      const abort = new AbortController();
      const stream = eventStream(() => abort.abort());
      const started = Promise.withResolvers<void>();
      // Until the stream starts, a client that goes away (while its request waits for its turn)
      // is heard through the request's signal; after, through the stream's cancel. (Deno aborts
      // that signal once a response is delivered, too, so it must not stop a running stream.)
      const leave = () => abort.abort();
      request.signal.addEventListener("abort", leave, { once: true });
      const chat = service.chat(body.model, job, {
        signal: abort.signal,
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
      chat.then(({ result }) => stream.send(chunks.end(result)), (error) => {
        stream.send(streamError(error));
      }).finally(() => {
        stream.sendText("[DONE]");
        stream.close();
      });
      return raw(stream.response, [200]);
    },
    createEmbeddings: async ({ body, request }) => {
      const input = typeof body.input === "string" ? [body.input] : body.input;
      const result = await service.embed(body.model, input, request.signal);
      return json(200, embeddingsAnswer(body.model, result, body.encoding_format ?? "float"));
    },
  };
}
