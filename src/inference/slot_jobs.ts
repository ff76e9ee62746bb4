/**
 * One request's run on a loaded model: its turn on the slot's lane (model_slots.ts), metered on
 * its caller (caller_usage.ts), as one engine request on the lane's sequence.
 *
 * @module
 */
import type { CallerLedger, InferenceCaller } from "./caller_usage.ts";
import type { EngineProcess } from "./engine_process.ts";
import type { ChatJob, ChatResult, EmbedResult, LoadedModelInfo } from "./engine_protocol.ts";
import type { ModelSlot } from "./model_slots.ts";

/** What a chat's caller hears of it besides the result. */
export interface ChatOptions {
  /** Stops the generation, or the wait for its turn. */
  signal?: AbortSignal;
  /** The model's turn has come (it is loaded): generation starts. */
  onStart?: (info: LoadedModelInfo) => void;
  /** A piece of the reply. */
  onText?: (text: string) => void;
  /** Load progress, 0..1, when the model loads first. */
  onLoad?: (progress: number) => void;
  /** Who asks; the key holder when absent. */
  caller?: InferenceCaller;
}

/** The engine and the ledger a run uses. */
export interface SlotRunner {
  engine: EngineProcess;
  ledger: CallerLedger;
}

/**
 * Runs `job` (max_tokens already bounded) on `slot` when its turn comes: the caller's signal
 * and the ledger's budget stop both stop the engine request.
 */
export async function chatOnSlot(
  { engine, ledger }: SlotRunner,
  slot: ModelSlot,
  job: ChatJob,
  options: ChatOptions,
  caller: InferenceCaller,
): Promise<ChatResult> {
  return await slot.run(
    (sequence) =>
      ledger.metered(caller, async (stop) => {
        options.onStart?.(slot.info);
        let running: number | undefined;
        const event = await engine.call(
          { op: "chat", key: slot.key, job, sequence },
          (e) => e.type === "text" && options.onText?.(e.text),
          (requestId) => {
            running = requestId;
            slot.activeRequests.add(requestId);
            const cancel = () => engine.cancel(requestId);
            options.signal?.addEventListener("abort", cancel, { once: true });
            stop.addEventListener("abort", cancel, { once: true });
          },
        ).finally(() => running !== undefined && slot.activeRequests.delete(running));
        if (event.type !== "chat-done") throw new Error(`unexpected engine answer ${event.type}`);
        return { value: event.result, ...event.result };
      }),
    options.signal,
    caller,
  );
}

/** Embeddings of each input on `slot` (a model of kind embed) when its turn comes. */
export async function embedOnSlot(
  { engine, ledger }: SlotRunner,
  slot: ModelSlot,
  input: string[],
  signal: AbortSignal | undefined,
  caller: InferenceCaller,
): Promise<EmbedResult> {
  return await slot.run(
    () =>
      ledger.metered(caller, async () => {
        const event = await engine.call({ op: "embed", key: slot.key, input });
        if (event.type !== "embed-done") {
          throw new Error(`unexpected engine answer ${event.type}`);
        }
        slot.record(0, 0);
        return { value: event.result, promptTokens: event.result.promptTokens };
      }),
    signal,
    caller,
  );
}
