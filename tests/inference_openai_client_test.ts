/**
 * The official `openai` npm client, unchanged (`new OpenAI({ baseURL, apiKey })`), against a real
 * node running tiny real models: what an OpenAI user's code does must work as it does against
 * OpenAI. Listing and retrieving models, chat completions whole and streamed (the same text at
 * temperature 0), the streaming helper, embeddings (the client asks for base64 and decodes it
 * itself), a forced tool call, an abort mid-stream, and the client's typed errors (401, 404 with
 * `model_not_found`, 400), under `/v1` and the reference's `/mimik-ai/openai/v1`.
 *
 * Written from OpenAI's API and the client's documented behaviour, not from the node's routes.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { ensureTestEngine } from "../testing/engine.ts";
import { startTestNode, type TestNode } from "../testing/node.ts";
import { createModel, uploadRaw } from "./helpers/store.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

const KEY = "an-openai-client-test-key-0123456789";
/** The embedding model's vector size (n_embd). */
const EMBEDDING = 48;

async function upload(node: TestNode, id: string, kind: string, bytes: Uint8Array) {
  await createModel(node, id, kind);
  const response = await uploadRaw(node, id, bytes);
  assert.equal(response.status, 200, await response.text());
}

/** Awaits `call`, which must reject with an error of `type`; returns it. */
async function rejection<E extends Error>(
  call: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof type, `expected ${type.name}, got ${error}`);
    return error;
  }
  throw new assert.AssertionError({ message: `expected ${type.name}, but it succeeded` });
}

/** A function whose one argument is an enum: its arguments are short whatever the model. */
const WEATHER: OpenAI.ChatCompletionFunctionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { unit: { type: "string", enum: ["c", "f"] } },
      required: ["unit"],
      additionalProperties: false,
    },
  },
};

const ASK = [{ role: "user" as const, content: "Tell me about the cat" }];

Deno.test("the official openai client works against a node, unchanged", async (t) => {
  await ensureTestEngine();
  await using node = await startTestNode({ config: { apiKey: KEY } });
  await upload(node, "tiny", "llm", tinyLlamaGguf());
  await upload(node, "tiny-embed", "embed", tinyLlamaGguf({ embedding: EMBEDDING, seed: 3 }));
  const client = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: node.apiKey });

  await t.step("models.list() iterates the ready models; models.retrieve(id)", async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) {
      assert.equal(model.object, "model");
      assert.equal(typeof model.created, "number");
      assert.equal(typeof model.owned_by, "string");
      ids.push(model.id);
    }
    assert.deepEqual(ids.sort(), ["tiny", "tiny-embed"]);
    const one = await client.models.retrieve("tiny");
    assert.equal(one.id, "tiny");
    assert.equal(one.object, "model");
  });

  let whole = "";
  await t.step("chat.completions.create: max_tokens, temperature 0, usage, length", async () => {
    const completion = await client.chat.completions.create({
      model: "tiny",
      messages: ASK,
      max_tokens: 12,
      temperature: 0,
    });
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.model, "tiny");
    assert.match(completion.id, /^chatcmpl-/);
    const [choice] = completion.choices;
    assert.equal(choice.finish_reason, "length");
    assert.equal(choice.message.role, "assistant");
    whole = choice.message.content ?? "";
    assert.ok(whole.trim().length > 0, JSON.stringify(completion));
    const usage = completion.usage!;
    assert.equal(usage.completion_tokens, 12);
    assert.ok(usage.prompt_tokens > 0);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    // The same request again: the same text (greedy decoding).
    const again = await client.chat.completions.create({
      model: "tiny",
      messages: ASK,
      max_tokens: 12,
      temperature: 0,
    });
    assert.equal(again.choices[0].message.content, whole);
    // The newer name of the limit, which the client's types recommend.
    const newer = await client.chat.completions.create({
      model: "tiny",
      messages: ASK,
      max_completion_tokens: 5,
      temperature: 0,
    });
    assert.equal(newer.usage?.completion_tokens, 5);
    assert.equal(newer.choices[0].finish_reason, "length");
  });

  await t.step("stream: true: chunks whose content joins into the same text, usage", async () => {
    const stream = await client.chat.completions.create({
      model: "tiny",
      messages: ASK,
      max_tokens: 12,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = "";
    let role: string | undefined;
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | undefined | null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.object, "chat.completion.chunk");
      assert.equal(chunk.model, "tiny");
      const choice = chunk.choices[0];
      role ??= choice?.delta.role;
      content += choice?.delta.content ?? "";
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(chunks >= 3, `${chunks} chunks`);
    assert.equal(role, "assistant");
    assert.equal(content, whole);
    assert.equal(finish, "length");
    assert.equal(usage?.completion_tokens, 12);
  });

  await t.step(
    "the client's streaming helper (chat.completions.stream) accumulates it",
    async () => {
      const runner = client.chat.completions.stream({
        model: "tiny",
        messages: ASK,
        max_tokens: 12,
        temperature: 0,
      });
      const pieces: string[] = [];
      runner.on("content", (delta) => pieces.push(delta));
      const final = await runner.finalChatCompletion();
      assert.equal(final.choices[0].message.content, whole);
      assert.equal(final.choices[0].finish_reason, "length");
      assert.equal(pieces.join(""), whole);
    },
  );

  await t.step("embeddings.create: base64 by default, decoded; float when asked", async () => {
    const decoded = await client.embeddings.create({
      model: "tiny-embed",
      input: ["hello world", "the cat sat"],
    });
    assert.equal(decoded.object, "list");
    assert.equal(decoded.data.length, 2);
    assert.deepEqual(decoded.data.map((d) => d.index), [0, 1]);
    for (const { embedding } of decoded.data) {
      assert.equal(embedding.length, EMBEDDING);
      assert.ok(embedding.every(Number.isFinite));
      assert.ok(embedding.some((x) => x !== 0));
    }
    assert.ok(decoded.usage.prompt_tokens > 0);
    const floats = await client.embeddings.create({
      model: "tiny-embed",
      input: "hello world",
      encoding_format: "float",
    });
    assert.equal(floats.data.length, 1);
    const vector = floats.data[0].embedding;
    assert.ok(Array.isArray(vector));
    assert.equal(vector.length, EMBEDDING);
    // base64 carries float32: the same vector within float32 precision.
    decoded.data[0].embedding.forEach((x, i) =>
      assert.ok(Math.abs(x - vector[i]) <= 1e-6 * Math.max(1, Math.abs(vector[i])), `${i}`)
    );
  });

  await t.step(
    "a forced tool call (tool_choice required): its arguments fit the schema",
    async () => {
      const completion = await client.chat.completions.create({
        model: "tiny",
        messages: [{ role: "user", content: "What is the weather in Paris?" }],
        temperature: 0,
        max_tokens: 60,
        tool_choice: "required",
        tools: [WEATHER],
      });
      const [choice] = completion.choices;
      assert.equal(choice.finish_reason, "tool_calls", JSON.stringify(completion));
      const calls = choice.message.tool_calls ?? [];
      assert.equal(calls.length, 1);
      const call = calls[0];
      assert.equal(call.type, "function");
      if (call.type !== "function") return;
      assert.equal(call.function.name, "get_weather");
      assert.ok(call.id.length > 0);
      const args = JSON.parse(call.function.arguments);
      assert.deepEqual(Object.keys(args), ["unit"]);
      assert.ok(["c", "f"].includes(args.unit), call.function.arguments);

      // Streamed: the client's helper builds the call from the chunks' tool_calls deltas.
      const streamed = await client.chat.completions.stream({
        model: "tiny",
        messages: [{ role: "user", content: "What is the weather in Paris?" }],
        temperature: 0,
        max_tokens: 60,
        tool_choice: "required",
        tools: [WEATHER],
      }).finalChatCompletion();
      assert.equal(streamed.choices[0].finish_reason, "tool_calls");
      const [again] = streamed.choices[0].message.tool_calls ?? [];
      assert.equal(again?.type, "function");
      if (again?.type !== "function") return;
      assert.equal(again.function.name, "get_weather");
      assert.deepEqual(JSON.parse(again.function.arguments), args, "the same call");
    },
  );

  await t.step(
    "an abort mid-stream ends the iteration; the model serves the next request",
    async () => {
      const abort = new AbortController();
      const stream = await client.chat.completions.create({
        model: "tiny",
        messages: [{ role: "user", content: "Write a long story" }],
        max_tokens: 400,
        temperature: 0,
        stream: true,
      }, { signal: abort.signal });
      // The client ends the iteration quietly when its request is aborted (no error, no chunk more).
      let chunks = 0;
      let finished = false;
      for await (const chunk of stream) {
        chunks++;
        if (chunk.choices[0]?.finish_reason) finished = true;
        if (chunks === 3) abort.abort();
      }
      assert.equal(chunks, 3);
      assert.equal(finished, false);
      assert.ok(stream.controller.signal.aborted);
      // The model is free again: the next request is answered, with the same text as before.
      const next = await client.chat.completions.create({
        model: "tiny",
        messages: ASK,
        max_tokens: 12,
        temperature: 0,
      });
      assert.equal(next.choices[0].message.content, whole);
    },
  );

  await t.step(
    "errors: wrong key 401, unknown model 404 model_not_found, bad input 400",
    async () => {
      const stranger = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: "not-the-key-0123456789" });
      const denied = await rejection(
        stranger.chat.completions.create({ model: "tiny", messages: ASK, max_tokens: 2 }),
        OpenAI.AuthenticationError,
      );
      assert.equal(denied.status, 401);
      assert.equal(denied.type, "authentication_error");
      assert.ok(denied.message.length > 0);

      const missing = await rejection(
        client.chat.completions.create({ model: "no-such-model", messages: ASK, max_tokens: 2 }),
        OpenAI.NotFoundError,
      );
      assert.equal(missing.status, 404);
      assert.equal(missing.code, "model_not_found");
      assert.equal(missing.type, "invalid_request_error");
      assert.match(missing.message, /no-such-model/);
      const streamed = await rejection(
        client.chat.completions.create({
          model: "no-such-model",
          messages: ASK,
          max_tokens: 2,
          stream: true,
        }),
        OpenAI.NotFoundError,
      );
      assert.equal(streamed.code, "model_not_found", "refused before any stream starts");
      const retrieved = await rejection(
        client.models.retrieve("no-such-model"),
        OpenAI.NotFoundError,
      );
      assert.equal(retrieved.code, "model_not_found");

      const bad = await rejection(
        client.chat.completions.create({
          model: "tiny",
          messages: ASK,
          max_tokens: 2,
          temperature: 7,
        }),
        OpenAI.BadRequestError,
      );
      assert.equal(bad.status, 400);
      assert.equal(bad.type, "invalid_request_error");
      assert.match(bad.message, /temperature/);
    },
  );

  await t.step("the reference's path: baseURL .../mimik-ai/openai/v1 works the same", async () => {
    const mimik = new OpenAI({ baseURL: `${node.url}/mimik-ai/openai/v1`, apiKey: node.apiKey });
    const ids: string[] = [];
    for await (const model of mimik.models.list()) ids.push(model.id);
    assert.deepEqual(ids.sort(), ["tiny", "tiny-embed"]);
    const completion = await mimik.chat.completions.create({
      model: "tiny",
      messages: ASK,
      max_tokens: 12,
      temperature: 0,
    });
    assert.equal(completion.choices[0].message.content, whole);
    const embedded = await mimik.embeddings.create({ model: "tiny-embed", input: "hi" });
    assert.equal(embedded.data[0].embedding.length, EMBEDDING);
  });
});
