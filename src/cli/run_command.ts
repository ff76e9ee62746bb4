/**
 * `edgenode run MODEL [PROMPT]`: chat with a model of a running node from a terminal, as
 * `ollama run` does, over the node's OpenAI-compatible API (spec/inference.yaml). The answer is
 * streamed (Server-Sent Events) to standard output as it is generated.
 *
 * With a PROMPT, or text on a standard input that is not a terminal (stdin first, then PROMPT,
 * joined by a space, as ollama joins them), it answers once and exits. On a terminal without a
 * prompt, or with `--interactive` whatever stdin is, it holds a conversation: `>>> ` prompts,
 * the history kept between turns, `/clear` forgets it, `/bye` or end of input (Ctrl-D) ends it,
 * and Ctrl-C stops the answer being written (the request is aborted, so the node stops too); a
 * PROMPT given with `--interactive` is its first question.
 * A model that is not loaded yet is loaded first through the registry's `PUT /models`, its
 * progress drawn on standard error when that is a terminal.
 *
 * @module
 */
import type { ModelEntry } from "../../gen/inference/validators.ts";
import { ConfigError } from "../config/config_error.ts";
import { storeClient } from "../sdk/clients.ts";
import { installingEngineOf } from "../sdk/load_progress.ts";
import { errorMessage, nodeError, nodeFetch } from "../sdk/node_errors.ts";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { clientError, type Env, invocation, reach } from "./cli_context.ts";
import { printJson } from "./output.ts";
import { parseModelName } from "./model_names.ts";
import { ensurePulled, notOnTheNode } from "./pull_command.ts";
import type { Command } from "./command.ts";

/** The help lines of this command. */
const HELP =
  `  edgenode run MODEL [PROMPT] [--system TEXT] [--temperature T] [--max-tokens N] [--interactive]
      Chats with a model of the node, the answer streamed as it comes; a MODEL named
      hf.co/USER/REPO[:QUANT] or by URL is pulled first when the node lacks it (edgenode pull).
      With a PROMPT or piped input (stdin, then PROMPT) it answers once; on a terminal without
      one it holds a chat: /clear forgets it, /bye or Ctrl-D ends it, Ctrl-C stops an answer.
      --interactive chats on piped lines too (a PROMPT is then the first question); --json
      answers once with the API's whole chat.completion.`;

/** Where the OpenAI-compatible API may be: the short prefix, then the reference's. */
const PREFIXES = ["/v1", "/mimik-ai/openai/v1"];

/** A message of the conversation, as the API takes it. */
interface Message {
  role: "system" | "user" | "assistant";
  content: string;
}

/** The node's API for one model, and the request's settings. */
interface Chat {
  fetch: typeof fetch;
  api: string;
  headers: Record<string, string>;
  model: string;
  sampling: { temperature?: number; max_tokens?: number };
}

const encoder = new TextEncoder();

/** Writes all of `text` to standard output. */
async function write(text: string): Promise<void> {
  let bytes = encoder.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(await Deno.stdout.write(bytes));
}

/** A number flag within bounds, or undefined when not given. */
function numberFlag(value: unknown, flag: string, min: number, max: number, integer: boolean) {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value === "" || !Number.isFinite(number) || number < min || number > max) {
    throw new ConfigError(`--${flag} must be a number from ${min} to ${max} (got '${value}')`);
  }
  if (integer && !Number.isInteger(number)) {
    throw new ConfigError(`--${flag} must be a whole number (got '${value}')`);
  }
  return number;
}

/** The response's JSON body, or undefined when it has none. */
function bodyOf(response: Response): Promise<unknown> {
  return response.json().catch(() => undefined);
}

/**
 * The model's entry (GET /models/{id}) and the prefix the API answered under; an unknown model
 * is an error that says how to list and add models.
 */
async function findModel(fetcher: typeof fetch, url: string, model: string) {
  for (const prefix of PREFIXES) {
    const response = await fetcher(`${url}${prefix}/models/${encodeURIComponent(model)}`);
    const body = await bodyOf(response);
    if (response.ok) return { prefix, entry: body as ModelEntry };
    const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
    if (response.status === 404 && code === "model_not_found") {
      throw notOnTheNode(model, url);
    }
    if (response.status !== 404) throw nodeError(response, body, `finding model '${model}'`);
  }
  throw new Error(
    `the node at ${url} serves no chat API under ${PREFIXES.join(" or ")} ` +
      "(see its config's inference.enabled and inference.prefixes)",
  );
}

/** Loads `model` through the registry's load stream, drawing its progress on a terminal. */
async function load(connection: { url: string; credential?: string }, model: string) {
  const terminal = Deno.stderr.isTerminal();
  const draw = (text: string) => terminal && Deno.stderr.writeSync(encoder.encode(text));
  draw(`loading ${model}…`);
  try {
    const { response, error } = await storeClient(connection).PUT("/models", {
      body: { id: model, action: "load" },
      parseAs: "stream",
    });
    if (!response.ok || !response.body) {
      throw nodeError(response, error ?? await bodyOf(response), `loading ${model}`);
    }
    for await (const message of events(response.body)) {
      if (message.error) throw new Error(`loading ${model}: ${errorMessage(message)}`);
      if (message.loaded) return;
      // The engine's install comes first, in words (src/inference/load_messages.ts).
      const installing = installingEngineOf(message.progress);
      if (installing) draw(`\r\x1b[2K${installing}…`);
      const percent = /(\d+)%/.exec(String(message.progress ?? ""))?.[1];
      if (percent) draw(`\r\x1b[2Kloading ${model}… ${percent}%`);
    }
    throw new Error(`loading ${model}: the node ended the stream before the model was loaded`);
  } finally {
    draw("\r\x1b[2K");
  }
}

/** The JSON messages of an event stream (`[DONE]` ends it). */
async function* events(body: ReadableStream<Uint8Array>) {
  const parsed = body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
  for await (const event of parsed) {
    if (event.data === "[DONE]") return;
    yield JSON.parse(event.data) as Record<string, unknown> & { error?: unknown };
  }
}

/** POST /chat/completions; a refusal is an error with the node's message. */
async function complete(chat: Chat, messages: Message[], stream: boolean, signal?: AbortSignal) {
  const response = await chat.fetch(`${chat.api}/chat/completions`, {
    method: "POST",
    headers: chat.headers,
    body: JSON.stringify({ model: chat.model, messages, stream, ...chat.sampling }),
    signal,
  });
  if (!response.ok || !response.body) {
    throw clientError(nodeError(response, await bodyOf(response), `chatting with ${chat.model}`));
  }
  return response;
}

/** Streams the answer to `messages` to standard output; returns its whole text. */
async function answer(chat: Chat, messages: Message[], signal: AbortSignal): Promise<string> {
  const response = await complete(chat, messages, true, signal);
  let text = "";
  for await (const chunk of events(response.body!)) {
    if (chunk.error) throw new Error(`${chat.model}: ${errorMessage(chunk)}`);
    const choices = chunk.choices as { delta?: { content?: string | null } }[] | undefined;
    const piece = choices?.[0]?.delta?.content;
    if (piece) {
      text += piece;
      await write(piece);
    }
  }
  if (!text.endsWith("\n")) await write("\n");
  return text;
}

/** Standard input's lines, as they come. */
async function* lines(input: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffer = "";
  for await (const text of input.pipeThrough(new TextDecoderStream())) {
    buffer += text;
    for (let at = buffer.indexOf("\n"); at !== -1; at = buffer.indexOf("\n")) {
      yield buffer.slice(0, at).replace(/\r$/, "");
      buffer = buffer.slice(at + 1);
    }
  }
  if (buffer) yield buffer;
}

const CHAT_HELP = `Commands:
  /clear    forget the conversation
  /bye      leave (or Ctrl-D)
  /?        this help
Ctrl-C stops an answer.
`;

/**
 * The conversation: a `>>> ` prompt per turn until /bye or the end of input; `first`, when
 * given, is asked before the first prompt. A failed turn is said, and the conversation goes on.
 */
async function converse(chat: Chat, system: Message[], first: string): Promise<number> {
  let history: Message[] = [...system];
  let current: AbortController | undefined;
  const onInterrupt = () => {
    if (current) current.abort();
    else write("\nUse Ctrl + d or /bye to exit.\n>>> ").catch(() => {});
  };
  const ask = async (question: string) => {
    const asked = [...history, { role: "user" as const, content: question }];
    current = new AbortController();
    try {
      const text = await answer(chat, asked, current.signal);
      history = [...asked, { role: "assistant", content: text }];
    } catch (error) {
      // Stopped or failed: the question and its partial answer are forgotten.
      if (current.signal.aborted) await write("\n");
      else console.error(`edgenode: ${(clientError(error) as Error).message}`);
    } finally {
      current = undefined;
    }
    await write("\n");
  };
  Deno.addSignalListener("SIGINT", onInterrupt);
  try {
    if (first) await ask(first);
    await write(">>> ");
    for await (const raw of lines(Deno.stdin.readable)) {
      const line = raw.trim();
      if (line === "/bye") return 0;
      if (line === "/clear") {
        history = [...system];
        await write("Cleared the conversation.\n");
      } else if (line === "/?" || line === "/help") await write(CHAT_HELP);
      else if (line.startsWith("/")) await write(`Unknown command '${line}'. Type /? for help\n`);
      else if (line) await ask(raw);
      await write(">>> ");
    }
    await write("\n");
    return 0;
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
  }
}

/** `edgenode run MODEL [PROMPT]`. */
async function run(args: string[], env: Env): Promise<number> {
  const { values, positionals, connection, json } = invocation(args, {
    system: { type: "string" },
    temperature: { type: "string" },
    "max-tokens": { type: "string" },
    interactive: { type: "boolean" },
  }, env);
  const [name, ...words] = positionals;
  if (!name) throw new ConfigError("usage: edgenode run MODEL [PROMPT] (edgenode run --help)");
  const temperature = numberFlag(values.temperature, "temperature", 0, 2, false);
  const maxTokens = numberFlag(values["max-tokens"], "max-tokens", 1, 16777216, true);
  const interactive = values.interactive === true ||
    (words.length === 0 && Deno.stdin.isTerminal());
  if (interactive && json) throw new ConfigError("--json answers once: give a PROMPT");
  let prompt = words.join(" ");
  if (!interactive && !Deno.stdin.isTerminal()) {
    const piped = (await new Response(Deno.stdin.readable).text()).trimEnd();
    prompt = [piped, prompt].filter(Boolean).join(" ");
  }
  if (!interactive && !prompt) {
    throw new ConfigError("nothing to ask: give a PROMPT, pipe one in, or run on a terminal");
  }

  // A Hugging Face name or a URL is pulled first (nothing is downloaded when it is ready).
  const pulled = parseModelName(name).source === "id"
    ? { id: name, code: 0 }
    : await ensurePulled(name, storeClient(connection), connection.url, env, {
      json: false,
      quiet: true,
    });
  if (pulled.code !== 0) return pulled.code;
  const model = pulled.id;
  const fetcher = nodeFetch(connection.url);
  const { prefix, entry } = await reach(findModel(fetcher, connection.url, model));
  if (entry.info?.kind === "embed") {
    throw new Error(`model '${model}' is an embedding model (kind embed); run needs an llm or vlm`);
  }
  if (!entry.loaded) await reach(load(connection, model));
  const chat: Chat = {
    fetch: fetcher,
    api: connection.url + prefix,
    headers: {
      "Content-Type": "application/json",
      ...(connection.credential ? { Authorization: `Bearer ${connection.credential}` } : {}),
    },
    model,
    sampling: {
      ...(temperature !== undefined ? { temperature } : {}),
      ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
    },
  };
  const system: Message[] = typeof values.system === "string"
    ? [{ role: "system", content: values.system }]
    : [];
  if (interactive) return await converse(chat, system, prompt);

  const messages: Message[] = [...system, { role: "user", content: prompt }];
  if (json) return printJson(await (await reach(complete(chat, messages, false))).json()), 0;
  const stop = new AbortController();
  const onInterrupt = () => stop.abort();
  Deno.addSignalListener("SIGINT", onInterrupt);
  try {
    await reach(answer(chat, messages, stop.signal));
    return 0;
  } catch (error) {
    if (stop.signal.aborted) return await write("\n"), 130;
    if (error instanceof Deno.errors.BrokenPipe) return 0; // `| head`: it has what it wants.
    throw error;
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
  }
}

/** `edgenode run`. */
export const RUN_COMMAND: Command = { name: "run", help: HELP, run };
