/**
 * HTTP handlers of the OpenAI-compatible API, one per operation of spec/inference.yaml.
 *
 * @module
 */
import { inferenceRoutes } from "../../gen/inference/routes.ts";
import { type ErrorFormat, type ErrorPayload, jsonResponse } from "../http/errors.ts";
import { json, raw } from "../http/reply.ts";
import type { Handlers } from "../http/routes.ts";
import { eventStream, runStream, sseResponse } from "../http/sse.ts";
import type { InferenceService } from "./inference_service.ts";
import { modelLoading } from "./load_messages.ts";
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
    loadModel: ({ body }) =>
      raw(sseResponse(loading.load(body.model), `loading model '${body.model}'`), [200]),
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
      runStream(stream, async () => {
        const { result } = await chat;
        stream.send(chunks.end(result));
      }, { onError: openAiStreamError, what: "chat completion", last: "[DONE]" });
      return raw(stream.response, [200]);
    },
    createEmbeddings: async ({ body, request }) => {
      const input = typeof body.input === "string" ? [body.input] : body.input;
      const result = await service.embed(body.model, input, request.signal);
      return json(200, embeddingsAnswer(body.model, result, body.encoding_format ?? "float"));
    },
  };
}
