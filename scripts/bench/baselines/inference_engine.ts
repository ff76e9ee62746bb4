/**
 * The baseline of `deno task bench --only inference`: node-llama-cpp called directly, in a Deno
 * process of its own, as the node's engine process calls it (src/inference/engine_main.ts,
 * engine_models.ts, engine_chat.ts): the same getLlama options, one context with one sequence
 * reused by every chat, the ChatML wrapper, a LlamaChat per completion, and the time to the first
 * token and between the first and the last one taken in the same process, in onToken.
 *
 * `deno run -A --no-config --node-modules-dir=manual inference_engine.ts <node-llama-cpp
 * dist/index.js> <max threads>`, then one JSON command a line on stdin, one JSON answer a line on
 * stdout:
 * - `{"op":"load","path","contextSize","threads"}` → `{"threads"}`, the context's threads
 *   (without "threads", and max threads 0, node-llama-cpp's default); a later load replaces it;
 * - `{"op":"chat","prompt","maxTokens"}` → {@link DirectRun}.
 *
 * No imports: it runs without the repository's config, as the engine does.
 *
 * @module
 */

/** One completion measured inside the process. */
export interface DirectRun {
  promptTokens: number;
  /** Prompt tokens evaluated for this completion (the rest were in the sequence already). */
  evaluatedTokens: number;
  completionTokens: number;
  /** From generateResponse's call to the first generated token, ms. */
  ttftMs: number;
  /** From the first generated token to the last, ms. */
  decodeMs: number;
  stopReason: string;
}

const [entry, maxThreads] = Deno.args;
// deno-lint-ignore no-explicit-any
const nlc: any = await import(new URL(`file://${entry}`).href);
const llama = await nlc.getLlama({
  gpu: false,
  build: "never",
  skipDownload: true,
  maxThreads: Number(maxThreads) || undefined,
  logLevel: "warn",
  logger: (level: string, message: string) => console.error(`[llama.cpp ${level}] ${message}`),
});

// deno-lint-ignore no-explicit-any
let loaded: { model: any; context: any; sequence: any; chatWrapper: any } | undefined;

async function load(path: string, contextSize: number, threads?: number): Promise<number> {
  if (loaded) {
    await loaded.context.dispose();
    await loaded.model.dispose();
  }
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  const context = await model.createContext({ contextSize, threads, sequences: 1 });
  loaded = {
    model,
    context,
    sequence: context.getSequence(),
    // The registry's chatTemplateHint "chatml", as engine_models.ts resolves it.
    chatWrapper: nlc.resolveChatWrapper(model, { type: "chatML" }),
  };
  return context.idealThreads;
}

async function chat(prompt: string, maxTokens: number): Promise<DirectRun> {
  const { sequence, chatWrapper } = loaded!;
  const llamaChat = new nlc.LlamaChat({
    contextSequence: sequence,
    chatWrapper,
    autoDisposeSequence: false,
  });
  const abort = new AbortController();
  const started = performance.now();
  let firstTokenAt: number | undefined;
  let lastTokenAt = started;
  let completionTokens = 0;
  let promptTokens = 0;
  let evaluatedTokens = 0;
  const inputBefore = sequence.tokenMeter.usedInputTokens;
  let text = "";
  try {
    const response = await llamaChat.generateResponse(
      [{ type: "user", text: prompt }, { type: "model", response: [] }],
      {
        maxTokens,
        temperature: 0,
        signal: abort.signal,
        stopOnAbortSignal: true,
        onToken: (tokens: unknown[]) => {
          if (firstTokenAt === undefined) {
            firstTokenAt = performance.now();
            promptTokens = sequence.contextTokens.length;
            evaluatedTokens = sequence.tokenMeter.usedInputTokens - inputBefore;
          }
          lastTokenAt = performance.now();
          completionTokens += tokens.length;
        },
        onTextChunk: (chunk: string) => (text += chunk),
      },
    );
    return {
      promptTokens,
      evaluatedTokens,
      completionTokens,
      ttftMs: (firstTokenAt ?? performance.now()) - started,
      decodeMs: firstTokenAt === undefined ? 0 : lastTokenAt - firstTokenAt,
      stopReason: response.metadata.stopReason,
    };
  } finally {
    llamaChat.dispose();
  }
}

const encoder = new TextEncoder();
const answer = (value: unknown) => Deno.stdout.write(encoder.encode(JSON.stringify(value) + "\n"));
let buffered = "";
for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  buffered += chunk;
  let end;
  while ((end = buffered.indexOf("\n")) >= 0) {
    const command = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    try {
      if (command.op === "load") {
        await answer({ threads: await load(command.path, command.contextSize, command.threads) });
      } else {
        await answer(await chat(command.prompt, command.maxTokens));
      }
    } catch (error) {
      await answer({ error: String((error as Error)?.stack ?? error) });
    }
  }
}
