/**
 * A microservice's calls to its node (spec/mcm.yaml, ContainerCall): answered a bounded number
 * at once, a refusal (a DomainError) with its kind and details, any other failure as the node's
 * (`internal`): callFailure. No status crosses the channel; the sandbox makes the one the
 * microservice sees (worker/node_calls.ts). A call
 * whose work takes a while (a chat completion) is answered with a StreamingAnswer: it may send
 * events (ContainerEvent) before its value, and it stops when the container cancels the call
 * (ContainerCancel) or its channel ends.
 *
 * @module
 */
import type { ContainerCall } from "../../../gen/mcm/validators.ts";
import { DomainError, TooLarge, TooMany } from "../../errors/mod.ts";
import { MAX_FRAME_BYTES } from "../../tunnel/pipe_frames.ts";
import type { CallFailure } from "../sandbox/channel_protocol.ts";
import { CallCredit, type Emit } from "./call_credit.ts";

export { CreditError, type Emit, sendChunks } from "./call_credit.ts";

/** Calls a container may have waiting at once; more are refused (too_many). */
const MAX_CALLS = 16;

/** Whether `text` fits one frame of the channel (a larger one would break it). */
function fits(text: string): boolean {
  // UTF-8 takes at most 3 bytes a UTF-16 unit: most texts need no counting.
  return text.length * 3 <= MAX_FRAME_BYTES ||
    new TextEncoder().encode(text).length <= MAX_FRAME_BYTES;
}

/**
 * How `error` fails a call on the channel: a DomainError (a refusal) by its kind, its message and
 * its details; anything else as the node's own failure, whose message stays in the node's log.
 */
export function callFailure(error: unknown): CallFailure {
  if (!(error instanceof DomainError)) return { message: "the node failed", kind: "internal" };
  const { message, kind, details } = error;
  return Object.keys(details).length > 0 ? { message, kind, details } : { message, kind };
}

/**
 * The answer of a call that takes a while: `run` sends events with `emit` as they come and
 * resolves with the call's value (or throws, as a call does); `signal` aborts when the caller no
 * longer waits, and the work should then stop. An event that carries `bytes` of a body counts
 * against the call's window (call_credit.ts): `emit` then resolves once the microservice read
 * enough of what went before, and a body's source should await it before reading more
 * (sendChunks). Events without bytes (a chat's tokens) need not wait.
 */
export class StreamingAnswer {
  constructor(
    readonly run: (emit: Emit, signal: AbortSignal) => Promise<unknown>,
  ) {}
}

/** A call being answered. */
interface Running {
  abort: AbortController;
  credit: CallCredit;
}

/** The node's side of one container's calls. */
export class CallAnswers {
  readonly #send: (text: string) => void;
  readonly #onCall: (call: ContainerCall) => Promise<unknown>;
  readonly #log: (message: string) => void;
  /** The calls being answered, by id: aborted when cancelled. */
  readonly #running = new Map<number, Running>();

  /**
   * `send` sends a message's text to the container; `onCall` answers a call (throws a
   * DomainError for a refusal, may return a StreamingAnswer); `log` writes the container's log (the node's own
   * failures).
   */
  constructor(
    send: (text: string) => void,
    onCall: (call: ContainerCall) => Promise<unknown>,
    log: (message: string) => void,
  ) {
    this.#send = send;
    this.#onCall = onCall;
    this.#log = log;
  }

  /**
   * Answers `call` (its events, then its `answer` message), or refuses it when too many wait
   * already. A call cancelled meanwhile gets no answer.
   */
  async answer(call: ContainerCall): Promise<void> {
    const reply = (answer: Record<string, unknown>) => {
      const text = JSON.stringify({ t: "answer", id: call.id, ...answer });
      if (fits(text)) return this.#send(text);
      const tooLarge = new TooLarge(
        `the answer is over ${MAX_FRAME_BYTES} bytes: ask for less at once`,
      );
      this.#send(JSON.stringify({ t: "answer", id: call.id, error: callFailure(tooLarge) }));
    };
    if (this.#running.size >= MAX_CALLS) {
      return reply({ error: callFailure(new TooMany("too many calls to the node at once")) });
    }
    const abort = new AbortController();
    const credit = new CallCredit();
    const running = { abort, credit };
    this.#running.set(call.id, running);
    abort.signal.addEventListener("abort", () => credit.end(), { once: true });
    const emit = (value: unknown, bytes = 0) => {
      if (abort.signal.aborted) return Promise.resolve();
      const text = JSON.stringify({ t: "event", id: call.id, value });
      // Never thrown at the work that emits (the engine's reader): left out, and logged.
      if (!fits(text)) {
        this.#log(`an event of a call to the node was over ${MAX_FRAME_BYTES} bytes; dropped`);
        return Promise.resolve();
      }
      this.#send(text);
      return bytes > 0 ? credit.sent(bytes) : Promise.resolve();
    };
    try {
      let value = await this.#onCall(call);
      if (value instanceof StreamingAnswer) value = await value.run(emit, abort.signal);
      if (!abort.signal.aborted) reply({ value });
    } catch (error) {
      if (abort.signal.aborted) return;
      if (!(error instanceof DomainError)) {
        this.#log(`a call to the node failed: ${(error as Error).message}`);
      }
      reply({ error: callFailure(error) });
    } finally {
      credit.end();
      // Not another call's (a container that reuses an id harms only itself).
      if (this.#running.get(call.id) === running) this.#running.delete(call.id);
    }
  }

  /**
   * The microservice read `bytes` of call `id`'s streamed body (ContainerTook). One of a call
   * that ended is late, not wrong: ignored. More than was sent breaks the protocol: CreditError.
   */
  took(id: number, bytes: number): void {
    this.#running.get(id)?.credit.took(bytes);
  }

  /** The container no longer waits for call `id`: its work stops, and no answer goes. */
  cancel(id: number): void {
    this.#running.get(id)?.abort.abort();
  }

  /** The channel ended: every call's work stops. */
  cancelAll(): void {
    for (const { abort } of this.#running.values()) abort.abort();
  }
}
