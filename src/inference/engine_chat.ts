/**
 * One chat completion in the engine process: the messages become node-llama-cpp's chat history,
 * the model's chat format renders them, and the reply streams out chunk by chunk.
 *
 * Tools: with `toolChoice` "auto" the model may call a function in its chat format's own syntax
 * (node-llama-cpp parses it and constrains the arguments to the schema). "required" or a name
 * force a call: the reply is then generated under a grammar from the functions' schemas, which
 * any model, even one never trained for tools, answers with valid arguments.
 *
 * Runs in the engine process only: relative imports, no import map.
 *
 * @module
 */
import { Invalid } from "../errors/mod.ts";
import type { LoadedModel, Nlc } from "./engine_models.ts";
import type {
  ChatJob,
  ChatResult,
  EngineMessage,
  EngineTool,
  EngineToolCall,
  FinishReason,
} from "./engine_protocol.ts";

type HistoryItem =
  | { type: "system" | "user"; text: string }
  // deno-lint-ignore no-explicit-any
  | { type: "model"; response: any[] };

/** node-llama-cpp's chat history for OpenAI-style messages, ending in the reply to generate. */
export function chatHistory(messages: EngineMessage[]): HistoryItem[] {
  const history: HistoryItem[] = [];
  const calls = new Map<string, { result: unknown }>();
  for (const message of messages) {
    if (message.role === "system" || message.role === "user") {
      history.push({ type: message.role, text: message.content });
    } else if (message.role === "assistant") {
      const response: unknown[] = message.content ? [message.content] : [];
      for (const call of message.toolCalls ?? []) {
        const item = {
          type: "functionCall",
          name: call.name,
          params: parseOr(call.arguments, call.arguments),
          result: undefined as unknown,
        };
        calls.set(call.id, item);
        response.push(item);
      }
      history.push({ type: "model", response });
    } else if (message.role === "tool") {
      const call = calls.get(message.toolCallId);
      if (call) call.result = parseOr(message.content, message.content);
    }
  }
  // A reply that ends in calls with results goes on after them; otherwise a new reply starts.
  const last = history.at(-1);
  const continues = last?.type === "model" &&
    last.response.some((item) => typeof item === "object");
  if (!continues) history.push({ type: "model", response: [] });
  return history;
}

function parseOr(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}

/** A tool call id in the reference's 1.0 form: `call_<n>_<8 hex>`. */
function callId(index: number): string {
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(4)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  return `call_${index}_${hex}`;
}

/** The schema a forced call is generated under: the one function's arguments, or any of several. */
function forcedCallSchema(tools: EngineTool[]): Record<string, unknown> {
  const argumentsOf = (tool: EngineTool) => tool.parameters ?? { type: "object", properties: {} };
  if (tools.length === 1) return argumentsOf(tools[0]);
  return {
    oneOf: tools.map((tool) => ({
      type: "object",
      properties: { name: { const: tool.name }, arguments: argumentsOf(tool) },
    })),
  };
}

/**
 * The call a forced generation made. Its JSON is complete unless max_tokens cut it: then the
 * arguments are the text as it stands (finish_reason "length" says so, as OpenAI does).
 */
function forcedCall(forced: EngineTool[], text: string): EngineToolCall {
  let parsed: { name?: string; arguments?: unknown } | undefined;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { id: callId(0), name: forced[0].name, arguments: text };
  }
  return forced.length === 1
    ? { id: callId(0), name: forced[0].name, arguments: JSON.stringify(parsed) }
    : { id: callId(0), name: parsed!.name!, arguments: JSON.stringify(parsed!.arguments ?? {}) };
}

/** The context's words for a prompt that cannot fit (OpenAI's context_length_exceeded). */
export function contextWords(contextSize: number): string {
  return `the model's context of ${contextSize} tokens`;
}

/**
 * Refuses (400) messages whose text alone is more tokens than the context holds: node-llama-cpp
 * would cut the prompt short without a word, or find no tokens to evaluate. Text of fewer UTF-8
 * bytes than the context has fewer tokens than that: it is not tokenized here.
 */
function tooLong(loaded: LoadedModel, messages: EngineMessage[]): void {
  const contextSize = loaded.info.contextSize;
  const text = messages.map((message) => message.content ?? "").join("\n");
  // A UTF-16 unit is at most 3 UTF-8 bytes, and a token at least one byte.
  if (text.length * 3 < contextSize) return;
  const tokens = loaded.model.tokenize(text).length;
  if (tokens < contextSize) return;
  throw new Invalid(
    `the prompt is ${tokens} tokens, more than ${contextWords(contextSize)}; send a shorter ` +
      "prompt, or raise the model's gguf.initContextSize",
    { exceeded: "context" },
  );
}

/**
 * Runs `job` on sequence `index` of `loaded`; `onText` gets the reply as it is generated. Jobs
 * on the context's other sequence run alongside: node-llama-cpp evaluates both in one batch.
 */
export async function runChat(
  llama: Nlc,
  nlc: Nlc,
  loaded: LoadedModel,
  index: number,
  job: ChatJob,
  onText: (text: string) => void,
  signal: AbortSignal,
): Promise<ChatResult> {
  const sequence = loaded.sequences[index];
  const chat = new nlc.LlamaChat({
    contextSequence: sequence,
    chatWrapper: loaded.chatWrapper,
    autoDisposeSequence: false,
  });
  const forced = job.tools.length > 0 && job.toolChoice !== "auto" && job.toolChoice !== "none"
    ? job.tools.filter((tool) =>
      job.toolChoice === "required" ||
      tool.name === (job.toolChoice as { name: string }).name
    )
    : [];
  const schema = forced.length > 0 ? forcedCallSchema(forced) : job.json?.schema;
  const grammar = schema
    ? await llama.createGrammarForJsonSchema(schema)
    : job.json
    ? await llama.getGrammarFor("json")
    : undefined;
  const functions = !grammar && job.toolChoice === "auto" && job.tools.length > 0
    ? Object.fromEntries(
      job.tools.map((tool) => [tool.name, {
        description: tool.description,
        params: tool.parameters,
      }]),
    )
    : undefined;

  tooLong(loaded, job.messages);
  const started = performance.now();
  let firstTokenAt: number | undefined;
  let lastTokenAt = started;
  let completionTokens = 0;
  let promptTokens = 0;
  let cachedTokens = 0;
  const inputBefore = sequence.tokenMeter.usedInputTokens;
  try {
    const response = await chat.generateResponse(chatHistory(job.messages), {
      // Bounded by the context whatever the node sent: past it, generation would shift the
      // context and go on for ever.
      maxTokens: Math.min(job.maxTokens || loaded.info.contextSize, loaded.info.contextSize),
      temperature: job.temperature,
      topP: job.topP,
      seed: job.seed,
      customStopTriggers: job.stop.length > 0 ? job.stop : undefined,
      signal,
      stopOnAbortSignal: true,
      ...(grammar ? { grammar } : functions ? { functions } : {}),
      onToken: (tokens: unknown[]) => {
        if (firstTokenAt === undefined) {
          firstTokenAt = performance.now();
          // The context holds exactly the prompt when its first reply token arrives.
          promptTokens = sequence.contextTokens.length;
          // The meter counts the prompt's last token only after this callback: one behind. (A
          // prompt seen whole before still evaluates its last token again, for its logits.)
          const evaluated = sequence.tokenMeter.usedInputTokens - inputBefore + 1;
          cachedTokens = Math.max(0, promptTokens - evaluated);
        }
        lastTokenAt = performance.now();
        completionTokens += tokens.length;
      },
      onTextChunk: forced.length > 0 ? undefined : onText,
    });
    let text: string = response.response;
    let toolCalls: EngineToolCall[] = (response.functionCalls ?? []).map((
      call: { functionName: string; params: unknown },
      index: number,
    ) => ({
      id: callId(index),
      name: call.functionName,
      arguments: JSON.stringify(call.params ?? {}),
    }));
    if (forced.length > 0) {
      toolCalls = [forcedCall(forced, text)];
      text = "";
    }
    const stop = response.metadata.stopReason as string;
    const finishReason: FinishReason = stop === "maxTokens"
      ? "length"
      : toolCalls.length > 0
      ? "tool_calls"
      : "stop";
    if (firstTokenAt === undefined) promptTokens = sequence.contextTokens.length;
    return {
      text,
      finishReason,
      toolCalls,
      promptTokens,
      cachedTokens,
      completionTokens,
      ttftMs: (firstTokenAt ?? performance.now()) - started,
      decodeMs: firstTokenAt === undefined ? 0 : lastTokenAt - firstTokenAt,
    };
  } catch (error) {
    // node-llama-cpp's words when the prompt cannot be shortened to fit (what cannot be dropped,
    // such as the system prompt and the functions' documentation, is longer than the context):
    // the request's fault, never the engine's, so 400 rather than 503.
    if (
      /did not return a history that fits|failed to compress chat history|no tokens to evaluate/i
        .test(`${error}`)
    ) {
      throw new Invalid(
        `the prompt does not fit ${contextWords(loaded.info.contextSize)} ` +
          "(with the tools' descriptions and the system message); send a shorter prompt or " +
          "fewer tools, or raise the model's gguf.initContextSize",
        { exceeded: "context" },
      );
    }
    throw error;
  } finally {
    chat.dispose();
  }
}
