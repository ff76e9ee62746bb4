/**
 * OpenAI's request and answer shapes around the engine's jobs: a checked chat request becomes a
 * ChatJob, a ChatResult becomes a `chat.completion` or the chunks of a stream, an error's status
 * and details become OpenAI's error. Shared by the HTTP routes and microservices' `context.ml`.
 * No HTTP here: the edge passes the status.
 *
 * @module
 */
import { type ErrorDetails, Invalid } from "../errors/mod.ts";
import type {
  ChatCompletionRequest,
  ChatMessage,
  ContentPart,
  ModelInfo,
  ModelMetrics,
} from "../../gen/inference/validators.ts";
import type {
  ChatJob,
  ChatResult,
  EmbedResult,
  EngineMessage,
  EngineToolCall,
  LoadedModelInfo,
} from "./engine_protocol.ts";

/** llama.cpp's default sampling temperature; OpenAI's (1) is rough for small local models. */
export const DEFAULT_TEMPERATURE = 0.8;

function textOf(content: ChatMessage["content"], index: number): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  return content.map((part: ContentPart, at: number) => {
    if (part.type !== "text") {
      throw new Invalid(
        `messages[${index}].content[${at}]: parts of type ${part.type} are not supported; ` +
          "the engine runs text models, so send text parts only",
      );
    }
    return part.text ?? "";
  }).join("");
}

/** The engine's messages for OpenAI's, checked for what the schema cannot say. */
export function engineMessages(messages: ChatMessage[]): EngineMessage[] {
  const calls = new Set<string>();
  return messages.map((message, index): EngineMessage => {
    const content = textOf(message.content, index);
    switch (message.role) {
      case "system":
      case "developer":
        return { role: "system", content };
      case "user":
        return { role: "user", content };
      case "assistant": {
        const toolCalls: EngineToolCall[] = (message.tool_calls ?? []).map((call) => {
          calls.add(call.id);
          return { id: call.id, name: call.function.name, arguments: call.function.arguments };
        });
        return { role: "assistant", content, toolCalls };
      }
      case "tool":
        if (!message.tool_call_id || !calls.has(message.tool_call_id)) {
          throw new Invalid(
            `messages[${index}]: a tool message needs the tool_call_id of a tool call in an ` +
              "earlier assistant message",
          );
        }
        return { role: "tool", toolCallId: message.tool_call_id, content };
    }
  });
}

/** The engine job for a checked chat request. */
export function chatJob(request: ChatCompletionRequest): ChatJob {
  const stop = request.stop === undefined || request.stop === null
    ? []
    : typeof request.stop === "string"
    ? [request.stop]
    : request.stop;
  const choice = request.tool_choice;
  const tools = (request.tools ?? []).map((tool) => ({
    name: tool.function.name,
    description: tool.function.description,
    parameters: tool.function.parameters as Record<string, unknown> | undefined,
  }));
  if (typeof choice === "object" && !tools.some((tool) => tool.name === choice.function.name)) {
    throw new Invalid(`tool_choice names '${choice.function.name}', which is not among the tools`);
  }
  if (choice === "required" && tools.length === 0) {
    throw new Invalid("tool_choice 'required' needs at least one tool in 'tools'");
  }
  const format = request.response_format;
  if (format?.type === "json_schema" && !format.json_schema?.schema) {
    throw new Invalid("response_format.json_schema.schema is required for type json_schema");
  }
  return {
    messages: engineMessages(request.messages),
    maxTokens: request.max_tokens ?? request.max_completion_tokens ?? 0,
    temperature: request.temperature ?? DEFAULT_TEMPERATURE,
    topP: request.top_p,
    seed: request.seed,
    stop,
    tools,
    toolChoice: typeof choice === "object" ? { name: choice.function.name } : choice ?? "auto",
    json: format?.type === "json_schema"
      ? { schema: format.json_schema!.schema as Record<string, unknown> }
      : format?.type === "json_object"
      ? {}
      : undefined,
  };
}

/** OpenAI's `usage`, with the reference 1.0's timing extras. */
export function usageOf(result: ChatResult) {
  const decodeTps = result.completionTokens > 1 && result.decodeMs > 0
    ? ((result.completionTokens - 1) / result.decodeMs) * 1000
    : 0;
  const totalMs = result.ttftMs + result.decodeMs;
  return {
    prompt_tokens: result.promptTokens,
    completion_tokens: result.completionTokens,
    total_tokens: result.promptTokens + result.completionTokens,
    prompt_tokens_details: { cached_tokens: result.cachedTokens },
    ttft_ms: round(result.ttftMs),
    token_per_second: totalMs > 0 ? round((result.completionTokens / totalMs) * 1000) : 0,
    decode_token_per_second: round(decodeTps),
  };
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

function openAiToolCalls(calls: EngineToolCall[]) {
  return calls.map((call, index) => ({
    index,
    id: call.id,
    type: "function" as const,
    function: { name: call.name, arguments: call.arguments },
  }));
}

/** The whole answer of a chat completion. */
export function chatCompletion(model: string, id: string, created: number, result: ChatResult) {
  const toolCalls = result.toolCalls.length > 0
    ? { tool_calls: openAiToolCalls(result.toolCalls).map(({ index: _, ...call }) => call) }
    : {};
  return {
    id,
    object: "chat.completion" as const,
    created,
    model,
    choices: [{
      index: 0,
      message: {
        role: "assistant" as const,
        content: result.toolCalls.length > 0 && !result.text ? null : result.text,
        ...toolCalls,
      },
      logprobs: null,
      finish_reason: result.finishReason,
    }],
    usage: usageOf(result),
  };
}

/** Builds the chunks of one streamed completion. */
export function chunkMaker(model: string, id: string, created: number) {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id,
    object: "chat.completion.chunk" as const,
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  return {
    /** The first chunk: the role. */
    start: () => chunk({ role: "assistant", content: "" }),
    /** A piece of the reply. */
    text: (text: string) => chunk({ content: text }),
    /** The last chunk: tool calls, the finish reason and the usage. */
    end: (result: ChatResult) => ({
      ...chunk(
        result.toolCalls.length > 0 ? { tool_calls: openAiToolCalls(result.toolCalls) } : {},
        result.finishReason,
      ),
      usage: usageOf(result),
    }),
  };
}

/** GET /models' `info` of a model, from its record and, once loaded, from the engine. */
export function modelInfo(
  record: {
    kind: string;
    gguf?: { chatTemplateHint?: string; initContextSize?: number; initGpuLayerSize?: number };
    ggufInfo?: { parameterCount?: number; contextLength?: number; embeddingLength?: number };
    totalSize?: number;
  },
  loaded?: LoadedModelInfo,
): ModelInfo {
  const info: ModelInfo = {
    kind: record.kind as ModelInfo["kind"],
    chat_template_hint: record.gguf?.chatTemplateHint,
    // Once loaded, what the engine did with initGpuLayerSize (none on the CPU), and why.
    n_gpu_layers: loaded?.gpuLayers ?? record.gguf?.initGpuLayerSize ?? 0,
    max_context: loaded?.contextSize ?? record.gguf?.initContextSize,
    n_ctx_train: loaded?.nCtxTrain ?? record.ggufInfo?.contextLength,
    n_params: loaded?.nParams ?? record.ggufInfo?.parameterCount,
    n_embd: loaded?.nEmbd ?? record.ggufInfo?.embeddingLength,
    // The file's size, loaded or not (the engine's own figure counts tensor bytes only).
    model_size: record.totalSize ?? loaded?.modelSize,
    ...(loaded
      ? {
        chatTemplate: loaded.chatTemplate,
        n_vocab: loaded.nVocab,
        threads: loaded.threads,
        gpuLayersReason: loaded.gpuLayersReason,
        backend: loaded.backend as ModelInfo["backend"],
        vram_bytes: loaded.estimatedVramBytes,
      }
      : {}),
  };
  return Object.fromEntries(
    Object.entries(info).filter(([, value]) => value !== undefined),
  ) as ModelInfo;
}

/** One model of GET /models: the record, and the engine's figures once loaded. */
export function modelEntry(
  model: Parameters<typeof modelInfo>[0] & { id: string; createdAt: number },
  slot?: { info: LoadedModelInfo; metrics: ModelMetrics },
) {
  return {
    id: model.id,
    object: "model" as const,
    created: Math.floor(model.createdAt / 1000),
    owned_by: "mimik" as const,
    loaded: slot !== undefined,
    info: modelInfo(model, slot?.info),
    ...(slot ? { metrics: slot.metrics } : {}),
  };
}

/** The answer of POST /embeddings; base64 is the float32 little-endian bytes, as OpenAI sends. */
export function embeddingsAnswer(
  model: string,
  result: EmbedResult,
  format: "float" | "base64",
) {
  return {
    object: "list" as const,
    model,
    data: result.vectors.map((vector, index) => ({
      object: "embedding" as const,
      index,
      embedding: format === "base64"
        ? encodeBase64(new Uint8Array(Float32Array.from(vector).buffer))
        : vector,
    })),
    usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
  };
}

function encodeBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/** OpenAI's error `type` for a status. */
function errorType(status: number): string {
  if (status === 401 || status === 403) return "authentication_error";
  if (status === 429) return "rate_limit_error";
  if (status === 507) return "insufficient_memory";
  return status < 500 ? "invalid_request_error" : "server_error";
}

/** OpenAI's error `code` for an error's details: what was not found, what limit it went over. */
function errorCode(status: number, details: ErrorDetails): string | null {
  if (status === 404 && details.resource === "model") return "model_not_found";
  if (details.exceeded === "context") return "context_length_exceeded";
  return null;
}

/** An error in OpenAI's shape, `{ error: { message, type, param, code } }`, from its facts. */
export function openAiErrorBody(status: number, message: string, details: ErrorDetails = {}) {
  return {
    error: {
      message,
      type: errorType(status),
      // The body field at fault, as OpenAI names it.
      param: details.field ?? null,
      code: errorCode(status, details),
    },
  };
}
