/**
 * The OpenAI-compatible API (spec/inference.yaml) on a real node running tiny real llama models:
 * the model list, chat completions (whole, streamed, with stop sequences, forced tool calls),
 * embeddings, and errors in OpenAI's shape under both prefixes.
 */
import assert from "node:assert/strict";
import { expectJson } from "../testing/contract.ts";
import { ModelSchema } from "../gen/store/validators.ts";
import {
  api,
  chat,
  expectOpenAiError,
  inferenceNode,
  listed,
  listModels,
  MIMIK,
  say,
  streamChat,
  V1,
} from "./helpers/inference.ts";
import { createModel, uploadRaw } from "./helpers/store.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

/** Room for the functions' documentation the chat format adds when tools are given. */
const TINY = tinyLlamaGguf({ contextLength: 2048 });
const EOS = tinyLlamaGguf({ eos: "first", seed: 2 });
const EMBEDDING = 64;
const WEATHER = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather",
    parameters: {
      type: "object",
      properties: { unit: { type: "string", enum: ["c", "f"] } },
      required: ["unit"],
    },
  },
};

Deno.test("the OpenAI-compatible API on tiny llama models", async (t) => {
  await using node = await inferenceNode({
    tiny: { bytes: TINY },
    eos: { bytes: EOS },
    emb: { bytes: TINY, kind: "embed" },
  });
  await createModel(node, "pending", "llm");
  await createModel(node, "vision", "onnx", { onnx: { executionProvider: "cpu" } });
  await expectJson(await uploadRaw(node, "vision", new Uint8Array(100)), 200, ModelSchema);
  const ask = (extra: Record<string, unknown> = {}) => ({
    model: "tiny",
    messages: say("Hello there, how are you?"),
    max_tokens: 24,
    temperature: 0,
    ...extra,
  });

  await t.step("GET /models lists the ready GGUF models without a key", async () => {
    for (const prefix of [V1, MIMIK]) {
      const models = await listModels(node, prefix);
      assert.deepEqual(models.map((m) => m.id), ["tiny", "eos", "emb"], "not onnx, not unready");
      for (const [index, model] of models.entries()) {
        assert.equal(model.object, "model");
        assert.equal(model.owned_by, "mimik");
        assert.equal(model.loaded, false);
        assert.equal(model.metrics, undefined);
        assert.ok(model.info.n_params! > 100_000 && model.info.n_params! < 200_000);
        assert.equal(model.info.n_ctx_train, [2048, 512, 2048][index]);
        assert.equal(model.info.model_size, [TINY, EOS, TINY][index].length);
      }
      assert.deepEqual(models.map((m) => m.info.kind), ["llm", "llm", "embed"]);
    }
  });

  let whole = "";
  await t.step("a chat completion runs to max_tokens", async () => {
    const started = Date.now();
    const answer = await chat(node, ask());
    assert.match(answer.id, /^chatcmpl-/);
    assert.equal(answer.model, "tiny");
    assert.ok(Math.abs(answer.created - started / 1000) < 60);
    assert.equal(answer.choices.length, 1);
    const [choice] = answer.choices;
    assert.equal(choice.finish_reason, "length");
    assert.equal(choice.message.role, "assistant");
    whole = choice.message.content;
    assert.ok(typeof whole === "string" && whole.trim().length > 0, JSON.stringify(answer));
    const { usage } = answer;
    assert.equal(usage.completion_tokens, 24);
    assert.ok(usage.prompt_tokens > 5);
    assert.equal(usage.total_tokens, usage.prompt_tokens + 24);
    assert.equal(typeof usage.ttft_ms, "number");
    assert.ok(usage.token_per_second! > 0 && usage.decode_token_per_second! > 0);
    assert.equal(typeof usage.prompt_tokens_details?.cached_tokens, "number");
    // Temperature 0 is deterministic; the same prompt again is in the context already, but for
    // its last token, evaluated again for its logits.
    const again = await chat(node, ask());
    assert.equal(again.choices[0].message.content, whole);
    assert.equal(again.usage.prompt_tokens_details?.cached_tokens, again.usage.prompt_tokens - 1);
  });

  await t.step("a streamed chat sends the same reply in chunks, then [DONE]", async () => {
    const response = await api(node, "/chat/completions", { ...ask(), stream: true });
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    await response.body?.cancel();
    const { chunks, content } = await streamChat(node, ask());
    assert.ok(chunks.length > 3);
    for (const chunk of chunks) {
      assert.equal(chunk.object, "chat.completion.chunk");
      assert.equal(chunk.id, chunks[0].id);
      assert.equal(chunk.model, "tiny");
    }
    assert.equal(chunks[0].choices[0].delta.role, "assistant");
    assert.ok(chunks.slice(0, -1).every((chunk) => chunk.choices[0].finish_reason === null));
    const last = chunks.at(-1);
    assert.equal(last.choices[0].finish_reason, "length");
    assert.equal(last.usage.completion_tokens, 24);
    assert.ok(last.usage.prompt_tokens > 5);
    assert.equal(content, whole);
  });

  await t.step("a stop sequence ends the reply before it", async () => {
    const words = whole.split(" ");
    const stop = words.slice(Math.floor(words.length / 2)).find((word) => word.length >= 2);
    assert.ok(stop, whole);
    const before = whole.slice(0, whole.indexOf(stop));
    const answer = await chat(node, ask({ stop: [stop] }));
    assert.equal(answer.choices[0].finish_reason, "stop");
    assert.equal(answer.choices[0].message.content, before, `stop ${JSON.stringify(stop)}`);
    assert.ok(answer.usage.completion_tokens < 24);
  });

  await t.step("a model whose first token is EOS answers an empty reply", async () => {
    const answer = await chat(node, ask({ model: "eos" }));
    assert.equal(answer.choices[0].message.content, "");
    assert.equal(answer.choices[0].finish_reason, "stop");
    assert.equal(answer.usage.completion_tokens, 0);
  });

  await t.step("a used model is listed loaded, with the engine's figures", async () => {
    const entry = await listed(node, "tiny");
    assert.equal(entry?.loaded, true);
    assert.equal(entry.info.n_embd, EMBEDDING);
    assert.ok(entry.info.threads! >= 1);
    assert.equal(entry.info.max_context, 2048);
    assert.ok(entry.metrics!.inference_count >= 3, JSON.stringify(entry.metrics));
    assert.ok(entry.metrics!.tokens_per_second! > 0);
    assert.equal((await listed(node, "emb"))?.loaded, false, "never used");
  });

  await t.step("embeddings: a vector per input, float or base64", async () => {
    const input = ["hello world", "the cat sat on the mat"];
    const response = await api(node, "/embeddings", { model: "emb", input });
    const floats = await response.json();
    assert.equal(response.status, 200, JSON.stringify(floats));
    assert.equal(floats.object, "list");
    assert.equal(floats.data.length, 2);
    assert.deepEqual(floats.data.map((d: { index: number }) => d.index), [0, 1]);
    for (const { embedding } of floats.data) assert.equal(embedding.length, EMBEDDING);
    assert.notDeepEqual(floats.data[0].embedding, floats.data[1].embedding);
    assert.ok(floats.usage.prompt_tokens > 4);
    const base64 = await (await api(node, "/embeddings", {
      model: "emb",
      input,
      encoding_format: "base64",
    })).json();
    for (const [index, { embedding }] of base64.data.entries()) {
      assert.equal(typeof embedding, "string");
      const bytes = Uint8Array.from(atob(embedding), (c) => c.charCodeAt(0));
      const decoded = new DataView(bytes.buffer);
      const floats32 = Array.from(
        { length: bytes.length / 4 },
        (_, i) => decoded.getFloat32(i * 4, true),
      );
      assert.deepEqual(floats32, floats.data[index].embedding);
    }
    const one = await (await api(node, "/embeddings", { model: "emb", input: "hello world" }))
      .json();
    assert.deepEqual(one.data[0].embedding, floats.data[0].embedding);
    const chatOnEmbed = await api(node, "/chat/completions", ask({ model: "emb" }));
    assert.match((await expectOpenAiError(chatOnEmbed, 400)).message, /kind embed/);
    const embedOnLlm = await api(node, "/embeddings", { model: "tiny", input });
    assert.match((await expectOpenAiError(embedOnLlm, 400)).message, /kind llm/);
  });

  await t.step("a forced tool call has valid arguments; its result goes back", async () => {
    const named = { type: "function", function: { name: "get_weather" } };
    for (const choice of ["required", named]) {
      const messages = say("What is the weather in Paris?");
      const answer = await chat(node, {
        ...ask({ messages }),
        tools: [WEATHER],
        tool_choice: choice,
      });
      const [{ message, finish_reason }] = answer.choices;
      assert.equal(finish_reason, "tool_calls", JSON.stringify(answer));
      assert.equal(message.content, null);
      assert.equal(message.tool_calls.length, 1);
      const [call] = message.tool_calls;
      assert.equal(call.type, "function");
      assert.equal(call.function.name, "get_weather");
      assert.match(call.id, /^call_0_[0-9a-f]{8}$/);
      assert.ok(["c", "f"].includes(JSON.parse(call.function.arguments).unit));
      const history = (toolCallId: string) => [
        ...messages,
        { role: "assistant", content: null, tool_calls: [call] },
        { role: "tool", tool_call_id: toolCallId, content: '{"temperature": 21}' },
      ];
      const next = await chat(node, { ...ask({ messages: history(call.id) }), tools: [WEATHER] });
      assert.ok(["stop", "length", "tool_calls"].includes(next.choices[0].finish_reason));
      const unknown = await api(node, "/chat/completions", {
        ...ask({ messages: history("call_9_00000000") }),
        tools: [WEATHER],
      });
      assert.match((await expectOpenAiError(unknown, 400)).message, /tool_call_id/);
      // The functions' documentation alone overflows a 512-token context: the request's fault.
      const tooLong = await api(node, "/chat/completions", {
        ...ask({ model: "eos", messages: history(call.id) }),
        tools: [WEATHER],
      });
      assert.match((await expectOpenAiError(tooLong, 400)).message, /does not fit .* 512 tokens/);
    }
  });

  await t.step("errors have OpenAI's shape", async () => {
    const call = (body: unknown, options = {}) => api(node, "/chat/completions", body, options);
    for (const prefix of [V1, MIMIK]) {
      let error = await expectOpenAiError(await call(ask(), { key: null, prefix }), 401);
      assert.equal(error.type, "authentication_error");
      error = await expectOpenAiError(await call(ask(), { key: "wrong-key", prefix }), 401);
      assert.equal(error.type, "authentication_error");
      error = await expectOpenAiError(await call(ask({ model: "nope" }), { prefix }), 404);
      assert.equal(error.code, "model_not_found");
      assert.equal(error.type, "invalid_request_error");
      assert.match(error.message, /nope/);
    }
    const invalid = async (body: unknown, pattern: RegExp) => {
      const error = await expectOpenAiError(await call(body), 400, "invalid_request_error");
      assert.match(error.message, pattern);
      assert.equal(error.code, null);
    };
    await invalid(ask({ temperature: 3 }), /temperature/);
    const field = await expectOpenAiError(await call(ask({ top_p: 2 })), 400);
    assert.equal(field.param, "top_p");
    await invalid(ask({ n: 2 }), /\bn\b/);
    await invalid(ask({ max_tokens: 0 }), /max_tokens/);
    await invalid(ask({ messages: [] }), /messages/);
    await invalid(
      ask({
        messages: [{
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
          ],
        }],
      }),
      /image_url/,
    );
    await invalid(ask({ model: "pending" }), /not ready/);
    await invalid(ask({ model: "vision" }), /onnx/);
    await invalid(ask({ tool_choice: "required" }), /tool/);
    const text = await call(JSON.stringify(ask()), { contentType: "text/plain" });
    await expectOpenAiError(text, 415, "invalid_request_error");
    const broken = await call("{not json", {});
    await expectOpenAiError(broken, 400, "invalid_request_error");
    await expectOpenAiError(await api(node, "/models/nope"), 404, "invalid_request_error");
    await expectOpenAiError(await api(node, "/models/nope", undefined, { key: null }), 404);
    const one = await api(node, "/models/tiny", undefined, { key: null, prefix: MIMIK });
    assert.equal((await one.json()).id, "tiny", "public, as GET /models");
  });

  await t.step("both prefixes run chats", async () => {
    const answer = await chat(node, ask(), { prefix: MIMIK });
    assert.equal(answer.choices[0].message.content, whole);
  });
});
