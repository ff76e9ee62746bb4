/**
 * A microservice's calls to its node (spec/mcm.yaml, ContainerCall): answered a bounded number
 * at once, a refusal with its HTTP-like status, any other failure as the node's (500).
 *
 * @module
 */
import type { ContainerCall } from "../../gen/mcm/validators.ts";

/** Calls a container may have waiting at once; more are refused (429). */
const MAX_CALLS = 16;

/** A refused call to the node, with its HTTP-like status. */
export class CallRefused extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
  }
}

/** The node's side of one container's calls. */
export class CallAnswers {
  readonly #send: (message: Record<string, unknown>) => void;
  readonly #onCall: (call: ContainerCall) => Promise<unknown>;
  readonly #log: (message: string) => void;
  #waiting = 0;

  /**
   * `send` sends a message to the container; `onCall` answers a call (throws CallRefused for a
   * refusal); `log` writes the container's log (the node's own failures).
   */
  constructor(
    send: (message: Record<string, unknown>) => void,
    onCall: (call: ContainerCall) => Promise<unknown>,
    log: (message: string) => void,
  ) {
    this.#send = send;
    this.#onCall = onCall;
    this.#log = log;
  }

  /** Answers `call` (its `answer` message), or refuses it when too many wait already. */
  async answer(call: ContainerCall): Promise<void> {
    const reply = (answer: Record<string, unknown>) =>
      this.#send({ t: "answer", id: call.id, ...answer });
    if (this.#waiting >= MAX_CALLS) {
      return reply({ error: { message: "too many calls to the node at once", status: 429 } });
    }
    this.#waiting++;
    try {
      reply({ value: await this.#onCall(call) });
    } catch (error) {
      if (!(error instanceof CallRefused)) {
        this.#log(`a call to the node failed: ${(error as Error).message}`);
      }
      const status = error instanceof CallRefused ? error.status : 500;
      const message = error instanceof CallRefused ? error.message : "the node failed";
      reply({ error: { message, status } });
    } finally {
      this.#waiting--;
    }
  }
}
