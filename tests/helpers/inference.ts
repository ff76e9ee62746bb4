/**
 * Shared setup of the inference tests: a node with tiny models uploaded, calls of the
 * OpenAI-compatible API, and the Server-Sent Events of chat streams and model loads.
 *
 * @module
 */
import assert from "node:assert/strict";
import { EventSourceParserStream } from "eventsource-parser/stream";
import * as v from "valibot";
import {
  ChatCompletionSchema,
  ModelEntrySchema,
  ModelListSchema,
  OpenAiErrorSchema,
} from "../../gen/inference/validators.ts";
import { ensureTestEngine } from "../../testing/engine.ts";
import { startTestNode, type TestNode } from "../../testing/node.ts";
import { createModel, uploadRaw } from "./store.ts";

/** The API's default prefix. */
export const V1 = "/v1";
/** The reference's prefix. */
export const MIMIK = "/mimik-ai/openai/v1";

/** A model to upload: its bytes, registry kind (llm by default) and other record fields. */
export interface TestModel {
  bytes: Uint8Array;
  kind?: string;
  record?: Record<string, unknown>;
}

/**
 * Installs the shared engine (so its first install is not charged to a request), starts a node
 * with `inference` settings, and uploads `models` by id.
 */
export async function inferenceNode(
  models: Record<string, TestModel>,
  inference: Record<string, unknown> = {},
): Promise<TestNode> {
  await ensureTestEngine();
  const node = await startTestNode({
    config: { apiKey: "an-inference-test-key-0123456789", inference },
  });
  try {
    for (const [id, { bytes, kind = "llm", record }] of Object.entries(models)) {
      await uploadModel(node, id, bytes, kind, record);
    }
  } catch (error) {
    await node[Symbol.asyncDispose]();
    throw error;
  }
  return node;
}

/** Creates a record and uploads its file; asserts the upload. */
export async function uploadModel(
  node: TestNode,
  id: string,
  bytes: Uint8Array,
  kind = "llm",
  record: Record<string, unknown> = {},
) {
  await createModel(node, id, kind, record);
  await replaceFile(node, id, bytes);
}

/** Uploads `bytes` as the file of `id` (replacing the file of a ready model). */
export async function replaceFile(node: TestNode, id: string, bytes: Uint8Array) {
  const response = await uploadRaw(node, id, bytes);
  const text = await response.text();
  assert.equal(response.status, 200, text);
}

/** Options of one API call. */
export interface CallOptions {
  /** The Authorization key: the node's by default, null for none. */
  key?: string | null;
  prefix?: string;
  signal?: AbortSignal;
  method?: string;
  contentType?: string;
}

/** Calls `path` of the API with a JSON body (unless `body` is a string); the response unread. */
export function api(
  node: TestNode,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<Response> {
  const { key = node.apiKey, prefix = V1, signal } = options;
  const headers: Record<string, string> = key === null ? {} : { Authorization: `Bearer ${key}` };
  if (body !== undefined) headers["Content-Type"] = options.contentType ?? "application/json";
  return fetch(`${node.url}${prefix}${path}`, {
    method: options.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    signal,
  });
}

/** A user message. */
export function say(text: string) {
  return [{ role: "user", content: text }];
}

/** POST /chat/completions, asserted 200 and checked against the spec. */
export async function chat(node: TestNode, body: Record<string, unknown>, options?: CallOptions) {
  const response = await api(node, "/chat/completions", body, options);
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const parsed = v.parse(ChatCompletionSchema, JSON.parse(text));
  // deno-lint-ignore no-explicit-any
  return parsed as typeof parsed & { choices: any[] };
}

/** An error answer: asserts the status and OpenAI's shape; returns its `error`. */
export async function expectOpenAiError(response: Response, status: number, type?: string) {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const { error } = v.parse(OpenAiErrorSchema, JSON.parse(text));
  if (type) assert.equal(error.type, type, error.message);
  return error;
}

/** GET /models (public), checked against the spec. */
export async function listModels(node: TestNode, prefix = V1) {
  const response = await api(node, "/models", undefined, { key: null, prefix });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return v.parse(ModelListSchema, JSON.parse(text)).data;
}

/** The entry of `id` in GET /models, if listed. */
export async function listed(node: TestNode, id: string) {
  return (await listModels(node)).find((entry) => entry.id === id);
}

/** GET /models/{id}, checked against the spec. */
export async function getModel(node: TestNode, id: string) {
  const response = await api(node, `/models/${id}`);
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return v.parse(ModelEntrySchema, JSON.parse(text));
}

/** The `data:` payloads of an event stream as they arrive, JSON parsed (`[DONE]` as is). */
export async function* sseData(response: Response): AsyncGenerator<unknown> {
  assert.equal(response.status, 200, `expected an event stream, got ${response.status}`);
  assert.equal(response.headers.get("content-type"), "text/event-stream");
  const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
  for await (const event of events) {
    yield event.data === "[DONE]" ? "[DONE]" : JSON.parse(event.data);
  }
}

/** Every `data:` payload of an event stream. */
export async function allData(response: Response): Promise<unknown[]> {
  const all: unknown[] = [];
  for await (const data of sseData(response)) all.push(data);
  return all;
}

/** A streamed chat's chunks (before `[DONE]`, asserted last) and its joined content. */
export async function streamChat(node: TestNode, body: Record<string, unknown>) {
  const all = await allData(await api(node, "/chat/completions", { ...body, stream: true }));
  assert.equal(all.at(-1), "[DONE]", JSON.stringify(all));
  // deno-lint-ignore no-explicit-any
  const chunks = all.slice(0, -1) as any[];
  const content = chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? "").join("");
  return { chunks, content };
}

/** What `command args` prints (it may fail: pgrep finding nothing exits with 1). */
async function output(command: string, args: string[]): Promise<string> {
  const { stdout } = await new Deno.Command(command, { args, stderr: "null" }).output();
  return new TextDecoder().decode(stdout).trim();
}

/**
 * The pid of `node`'s inference engine process (its command line allows reading
 * `<dataDir>/models` and runs engine_main.js, written to <dataDir>/inference), if one runs. (Deno reads /proc only with
 * --allow-all: ps and pgrep read it.)
 */
export async function enginePid(node: TestNode): Promise<number | undefined> {
  const found = await output("pgrep", ["-f", `${node.dataDir}/models,.*engine_main\\.js`]);
  return found ? Number(found.split("\n")[0]) : undefined;
}

/** Whether process `pid` runs (and is not a zombie). */
export async function alive(pid: number): Promise<boolean> {
  const state = await output("ps", ["-o", "stat=", "-p", String(pid)]);
  return state !== "" && !state.startsWith("Z");
}
