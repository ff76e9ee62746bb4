import assert from "node:assert/strict";
import * as v from "valibot";
import { Invalid } from "../errors/mod.ts";
import {
  type ChatCompletionRequest,
  ChatCompletionRequestSchema,
} from "../../gen/inference/validators.ts";
import type { ChatResult, LoadedModelInfo } from "./engine_protocol.ts";
import {
  chatCompletion,
  chatJob,
  chunkMaker,
  DEFAULT_TEMPERATURE,
  embeddingsAnswer,
  engineMessages,
  modelEntry,
  modelInfo,
  openAiErrorBody,
  usageOf,
} from "./openai_format.ts";

/** A chat request as the route has it: validated by the spec's schema. */
function request(body: Record<string, unknown>): ChatCompletionRequest {
  return v.parse(ChatCompletionRequestSchema, {
    model: "m",
    messages: [{ role: "user", content: "hi" }],
    ...body,
  });
}

/** Asserts that `fn` throws Invalid with a message matching `message`. */
function throwsInvalid(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (error) => error instanceof Invalid && message.test(error.message));
}

const RESULT: ChatResult = {
  text: "hello",
  finishReason: "stop",
  toolCalls: [],
  promptTokens: 10,
  cachedTokens: 4,
  completionTokens: 5,
  ttftMs: 100,
  decodeMs: 400,
};

const LOADED: LoadedModelInfo = {
  nVocab: 32000,
  nCtxTrain: 2048,
  nEmbd: 64,
  nParams: 15_000_000,
  modelSize: 30_000_000,
  contextSize: 1024,
  chatTemplate: "chatML",
  threads: 2,
  estimatedBytes: 50_000_000,
  sequences: 1,
  backend: "cpu",
  gpuLayers: 0,
  gpuLayersReason: "running on the CPU: inference.gpu is false",
  estimatedVramBytes: 0,
};

Deno.test("engineMessages: roles, text parts joined, tool results after their calls", () => {
  const messages = request({
    messages: [
      { role: "developer", content: "be brief" },
      { role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "42" },
    ],
  }).messages;
  assert.deepEqual(engineMessages(messages), [
    { role: "system", content: "be brief" },
    { role: "user", content: "ab" },
    { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "f", arguments: "{}" }] },
    { role: "tool", toolCallId: "c1", content: "42" },
  ]);
});

Deno.test("engineMessages: what the schema cannot refuse is Invalid, naming the message", () => {
  const cases: [Record<string, unknown>[], RegExp][] = [
    [
      [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }],
      /^messages\[0\]\.content\[0\]: parts of type image_url are not supported/,
    ],
    [[{ role: "tool", tool_call_id: "nope", content: "1" }], /^messages\[0\]: a tool message/],
    [[{ role: "tool", content: "1" }], /needs the tool_call_id of a tool call/],
  ];
  for (const [messages, message] of cases) {
    throwsInvalid(() => engineMessages(request({ messages }).messages), message);
  }
});

Deno.test("chatJob: defaults, stop as a list, tools and tool_choice, response formats", () => {
  const table: [string, Record<string, unknown>, Partial<ReturnType<typeof chatJob>>][] = [
    ["defaults", {}, {
      maxTokens: 0,
      temperature: DEFAULT_TEMPERATURE,
      stop: [],
      tools: [],
      toolChoice: "auto",
      json: undefined,
    }],
    ["max_tokens first", { max_tokens: 7, max_completion_tokens: 9 }, { maxTokens: 7 }],
    ["max_completion_tokens", { max_completion_tokens: 9 }, { maxTokens: 9 }],
    ["one stop string", { stop: "END" }, { stop: ["END"] }],
    ["stop strings", { stop: ["a", "b"] }, { stop: ["a", "b"] }],
    ["sampling", { temperature: 0, top_p: 0.5, seed: 3 }, { temperature: 0, topP: 0.5, seed: 3 }],
    ["json_object", { response_format: { type: "json_object" } }, { json: {} }],
    [
      "json_schema",
      { response_format: { type: "json_schema", json_schema: { name: "s", schema: { a: 1 } } } },
      { json: { schema: { a: 1 } } },
    ],
    ["text format", { response_format: { type: "text" } }, { json: undefined }],
    [
      "a named tool choice",
      {
        tools: [{ type: "function", function: { name: "f", description: "d" } }],
        tool_choice: { type: "function", function: { name: "f" } },
      },
      {
        tools: [{ name: "f", description: "d", parameters: undefined }],
        toolChoice: { name: "f" },
      },
    ],
  ];
  for (const [name, body, want] of table) {
    const job = chatJob(request(body));
    for (const [key, value] of Object.entries(want)) {
      assert.deepEqual(job[key as keyof typeof job], value, `${name}: ${key}`);
    }
    assert.deepEqual(job.messages, [{ role: "user", content: "hi" }], name);
  }
});

Deno.test("chatJob: a tool choice the tools cannot meet and a schema-less json_schema are Invalid", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      { tool_choice: { type: "function", function: { name: "g" } } },
      /tool_choice names 'g', which is not among the tools/,
    ],
    [{ tool_choice: "required" }, /tool_choice 'required' needs at least one tool/],
    [
      { response_format: { type: "json_schema", json_schema: { name: "s" } } },
      /response_format\.json_schema\.schema is required/,
    ],
  ];
  for (const [body, message] of cases) {
    throwsInvalid(() => chatJob(request(body)), message);
  }
});

Deno.test("usageOf: token counts, cached tokens and the timing extras, rounded", () => {
  assert.deepEqual(usageOf(RESULT), {
    prompt_tokens: 10,
    completion_tokens: 5,
    total_tokens: 15,
    prompt_tokens_details: { cached_tokens: 4 },
    ttft_ms: 100,
    token_per_second: 10,
    decode_token_per_second: 10,
  });
  const instant = usageOf({ ...RESULT, completionTokens: 1, ttftMs: 0, decodeMs: 0 });
  assert.equal(instant.token_per_second, 0);
  assert.equal(instant.decode_token_per_second, 0);
});

Deno.test("chatCompletion: the reply, or tool calls with a null content", () => {
  const answer = chatCompletion("m", "chatcmpl-1", 1700000000, RESULT);
  assert.equal(answer.object, "chat.completion");
  assert.deepEqual(answer.choices, [{
    index: 0,
    message: { role: "assistant", content: "hello" },
    logprobs: null,
    finish_reason: "stop",
  }]);
  const calls = chatCompletion("m", "chatcmpl-2", 1, {
    ...RESULT,
    text: "",
    finishReason: "tool_calls",
    toolCalls: [{ id: "c1", name: "f", arguments: '{"x":1}' }],
  });
  assert.deepEqual(calls.choices[0].message, {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"x":1}' } }],
  });
  assert.equal(calls.choices[0].finish_reason, "tool_calls");
});

Deno.test("chunkMaker: the role first, text deltas, and an end with finish reason and usage", () => {
  const chunks = chunkMaker("m", "chatcmpl-1", 5);
  const start = chunks.start();
  assert.equal(start.object, "chat.completion.chunk");
  assert.deepEqual(start.choices[0].delta, { role: "assistant", content: "" });
  assert.equal(start.choices[0].finish_reason, null);
  assert.deepEqual(chunks.text("he").choices[0].delta, { content: "he" });
  const end = chunks.end({
    ...RESULT,
    finishReason: "tool_calls",
    toolCalls: [{ id: "c1", name: "f", arguments: "{}" }],
  });
  assert.deepEqual(end.choices[0].delta, {
    tool_calls: [{
      index: 0,
      id: "c1",
      type: "function",
      function: { name: "f", arguments: "{}" },
    }],
  });
  assert.equal(end.choices[0].finish_reason, "tool_calls");
  assert.equal(end.usage.total_tokens, 15);
  assert.deepEqual(chunks.end(RESULT).choices[0].delta, {});
});

Deno.test("modelInfo: the record's figures, the engine's once loaded, no undefined keys", () => {
  const record = {
    kind: "llm",
    gguf: { chatTemplateHint: "chatml", initContextSize: 512 },
    ggufInfo: { parameterCount: 1, contextLength: 2, embeddingLength: 3 },
    totalSize: 99,
  };
  assert.deepEqual(modelInfo(record), {
    kind: "llm",
    chat_template_hint: "chatml",
    n_gpu_layers: 0,
    max_context: 512,
    n_ctx_train: 2,
    n_params: 1,
    n_embd: 3,
    model_size: 99,
  });
  assert.deepEqual(modelInfo({ kind: "embed" }, LOADED), {
    kind: "embed",
    n_gpu_layers: 0,
    max_context: 1024,
    n_ctx_train: 2048,
    n_params: 15_000_000,
    n_embd: 64,
    model_size: 30_000_000,
    chatTemplate: "chatML",
    n_vocab: 32000,
    threads: 2,
    gpuLayersReason: "running on the CPU: inference.gpu is false",
    backend: "cpu",
    vram_bytes: 0,
  });
  // Loaded, n_gpu_layers is what the engine offloaded, not what the record asked for.
  const asked = { kind: "llm", gguf: { initGpuLayerSize: 99 } };
  assert.equal(modelInfo(asked).n_gpu_layers, 99);
  assert.equal(modelInfo(asked, LOADED).n_gpu_layers, 0);
});

Deno.test("modelEntry: loaded and its metrics only with a slot", () => {
  const model = { id: "m", createdAt: 1_700_000_000_999, kind: "llm" };
  const idle = modelEntry(model);
  assert.deepEqual(idle, {
    id: "m",
    object: "model",
    created: 1_700_000_000,
    owned_by: "mimik",
    loaded: false,
    info: { kind: "llm", n_gpu_layers: 0 },
  });
  const metrics = {
    inference_count: 1,
    last_used: null,
    loaded_at: 1,
    tokens_per_second: null,
    avg_tokens_per_second: null,
  };
  const busy = modelEntry(model, { info: LOADED, metrics });
  assert.equal(busy.loaded, true);
  assert.deepEqual(busy.metrics, metrics);
});

Deno.test("embeddingsAnswer: float vectors, or float32 little-endian bytes in base64", () => {
  const result = { vectors: [[1, -2.5]], promptTokens: 3 };
  const floats = embeddingsAnswer("e", result, "float");
  assert.deepEqual(floats, {
    object: "list",
    model: "e",
    data: [{ object: "embedding", index: 0, embedding: [1, -2.5] }],
    usage: { prompt_tokens: 3, total_tokens: 3 },
  });
  const encoded = embeddingsAnswer("e", result, "base64").data[0].embedding as string;
  const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
  assert.deepEqual([...new Float32Array(bytes.buffer)], [1, -2.5]);
});

Deno.test("openAiErrorBody: type by status, param and code from the details, never the words", () => {
  const table: [number, Record<string, string>, { type: string; param: unknown; code: unknown }][] =
    [
      [400, { field: "top_p" }, { type: "invalid_request_error", param: "top_p", code: null }],
      [404, { resource: "model", id: "m" }, {
        type: "invalid_request_error",
        param: null,
        code: "model_not_found",
      }],
      [404, {}, { type: "invalid_request_error", param: null, code: null }],
      [400, { exceeded: "context" }, {
        type: "invalid_request_error",
        param: null,
        code: "context_length_exceeded",
      }],
      [401, {}, { type: "authentication_error", param: null, code: null }],
      [403, {}, { type: "authentication_error", param: null, code: null }],
      [429, {}, { type: "rate_limit_error", param: null, code: null }],
      [507, {}, { type: "insufficient_memory", param: null, code: null }],
      [503, {}, { type: "server_error", param: null, code: null }],
    ];
  for (const [status, details, want] of table) {
    // A message that reads like another error changes nothing.
    const message = "field 'x' of model 'm' not found in the model registry";
    assert.deepEqual(openAiErrorBody(status, message, details), { error: { message, ...want } });
  }
});
