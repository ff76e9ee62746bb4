/**
 * The page's link to the node's inference (spec/inference.yaml): the runnable models with
 * whether each is loaded, a streamed chat completion read from fetch's body as Server-Sent
 * Events, and loading or unloading a model through the registry (`PUT /models`).
 *
 * @module
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import createClient from "openapi-fetch";
import type { paths } from "../../../gen/inference/types.ts";
import type { ModelEntry, Usage } from "../../../gen/inference/validators.ts";
import { installingEngineOf } from "../../sdk/load_progress.ts";
import { clients, connection, messageOf } from "./node_api.ts";

export type { ModelEntry, Usage };

/** Where the API may be: the short prefix first, then the reference's (config `inference.prefixes`). */
const PREFIXES = ["/v1", "/mimik-ai/openai/v1"];

/** A message of the conversation, as the API takes it (a type: the body's has an index signature). */
export type ChatTurn = { role: "user" | "assistant"; content: string };

/** The prefix found to answer, once one has. */
let found: string | undefined;

function client(prefix: string) {
  const node = connection();
  return createClient<paths>({
    baseUrl: node.url + prefix,
    headers: node.credential ? { Authorization: `Bearer ${node.credential}` } : {},
  });
}

/** The registry's runnable models (GET /models); null when inference is off (404). */
export async function runnableModels(): Promise<ModelEntry[] | null> {
  for (const prefix of found ? [found] : PREFIXES) {
    const { data, error, response } = await client(prefix).GET("/models");
    if (data) {
      found = prefix;
      return data.data as ModelEntry[]; // without scope=mesh: the registry's models
    }
    if (response.status !== 404) throw error;
  }
  return null;
}

/** What a streamed completion gives, piece by piece. */
export type ChatEvent =
  | { text: string }
  | { usage: Usage; finishReason: string | null };

interface Chunk {
  choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[];
  usage?: Usage;
  error?: { message?: string };
}

/**
 * Streams a chat completion on `model`: the reply's pieces as they come, then the usage. A
 * refusal or an error message of the stream is thrown; aborting `signal` stops the generation
 * (the node stops it when the connection goes).
 */
export async function* streamChat(
  model: string,
  messages: ChatTurn[],
  maxTokens: number | undefined,
  signal: AbortSignal,
): AsyncGenerator<ChatEvent> {
  const { response, error } = await client(found ?? PREFIXES[0]).POST("/chat/completions", {
    body: { model, messages, stream: true, ...(maxTokens ? { max_tokens: maxTokens } : {}) },
    parseAs: "stream",
    signal,
  });
  if (!response.ok || !response.body) {
    throw new Error(messageOf(error) || `the node answered ${response.status}`);
  }
  const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
  for await (const event of events) {
    if (event.data === "[DONE]") return;
    const chunk = JSON.parse(event.data) as Chunk;
    if (chunk.error) throw new Error(chunk.error.message ?? "the completion failed");
    const choice = chunk.choices?.[0];
    if (choice?.delta?.content) yield { text: choice.delta.content };
    if (chunk.usage) yield { usage: chunk.usage, finishReason: choice?.finish_reason ?? null };
  }
}

/** Loads `id` into the engine; `onProgress` gets the percent from the load's event stream. */
export async function loadModel(
  id: string,
  onProgress: (percent: number) => void,
  onInstall: (words: string) => void = () => {},
): Promise<void> {
  const { response, error } = await clients().store.PUT("/models", {
    body: { id, action: "load" },
    parseAs: "stream",
  });
  if (!response.ok || !response.body) throw new Error(messageOf(error));
  const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
  for await (const event of events) {
    const message = JSON.parse(event.data) as {
      progress?: string;
      loaded?: boolean;
      error?: { message: string };
    };
    if (message.error) throw new Error(message.error.message);
    if (message.loaded) return;
    // The engine's install comes first, in words (src/inference/load_messages.ts).
    const installing = installingEngineOf(message.progress);
    if (installing) onInstall(installing);
    const percent = /(\d+)%/.exec(message.progress ?? "")?.[1];
    if (percent) onProgress(Number(percent));
  }
  throw new Error(`loading ${id}: the node ended the stream before the model was loaded`);
}

/** Unloads `id` from the engine. */
export async function unloadModel(id: string): Promise<void> {
  const { response, error } = await clients().store.PUT("/models", {
    body: { id, action: "unload" },
  });
  if (!response.ok) throw new Error(messageOf(error));
}
