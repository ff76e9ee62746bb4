/**
 * Whose request a model runs next. One job runs at a time per model; the others wait here, in
 * the order that keeps one caller from taking a model away from the rest:
 *
 * - the key holder's requests (the API's callers, who hold the node's key) come first, in their
 *   own places: microservices can neither fill them nor pass them;
 * - microservices' requests go round robin between clients (a container's client: all of one
 *   client's containers share its turn), each client's in its order;
 * - a client may have a bounded share of the places, so one client cannot fill the queue.
 *
 * A request that finds no place is refused at once (TooMany, 429 with Retry-After): nothing
 * ever waits for a place.
 *
 * @module
 */
import { Cancelled, TooMany } from "../errors/mod.ts";

/** Who waits. */
export interface QueueCaller {
  /** The round robin's unit: a microservice's client. */
  client: string;
  /** The key holder: first, in places of its own. */
  priority: boolean;
}

interface Waiter {
  go: () => void;
  fail: (error: Error) => void;
}

/** The waiting requests of one model. */
export class FairQueue {
  readonly #model: string;
  readonly #limit: number;
  readonly #perClient: number;
  readonly #priority: Waiter[] = [];
  /** Microservice clients' waiters; a client is in the map while it has any. */
  readonly #clients = new Map<string, Waiter[]>();
  /** Clients in the order of their next turn. */
  readonly #ring: string[] = [];
  #others = 0;

  /**
   * `limit` places for the key holder and `limit` for microservices, of which one client may
   * take `perClient` at most.
   */
  constructor(model: string, limit: number, perClient: number) {
    this.#model = model;
    this.#limit = limit;
    this.#perClient = Math.max(1, Math.min(perClient, limit));
  }

  /** Requests waiting. */
  get size(): number {
    return this.#priority.length + this.#others;
  }

  /**
   * Waits for the caller's turn (resolves when {@link next} gives it); throws TooMany at once
   * when its places are taken, Cancelled when `signal` aborts while it waits.
   */
  wait(caller: QueueCaller, signal?: AbortSignal): Promise<void> {
    const line = caller.priority ? this.#priority : this.#clients.get(caller.client) ?? [];
    const full = this.#refusal(caller, line);
    if (full) throw this.#full(full);
    return new Promise<void>((go, fail) => {
      const waiter: Waiter = { go, fail };
      line.push(waiter);
      if (!caller.priority) {
        this.#others++;
        if (!this.#clients.has(caller.client)) {
          this.#clients.set(caller.client, line);
          this.#ring.push(caller.client);
        }
      }
      signal?.addEventListener("abort", () => {
        if (this.#remove(caller, waiter)) {
          fail(new Cancelled("the client went away while waiting"));
        }
      }, { once: true });
    });
  }

  /** Whether {@link wait} would refuse `caller` now (its places are taken): a cheap look. */
  refuses(caller: QueueCaller): boolean {
    const line = caller.priority ? this.#priority : this.#clients.get(caller.client) ?? [];
    return this.#refusal(caller, line) !== undefined;
  }

  /** Why `caller`, whose waiters are `line`, finds no place; undefined when it finds one. */
  #refusal(caller: QueueCaller, line: Waiter[]): string | undefined {
    if (caller.priority) {
      return line.length >= this.#limit
        ? `${line.length} requests of the node's key holder are waiting already`
        : undefined;
    }
    if (this.#others >= this.#limit) {
      return `${this.#others} microservice requests are waiting already`;
    }
    if (line.length >= this.#perClient) {
      return `${line.length} requests of client '${caller.client}' are waiting already (a client ` +
        `may have ${this.#perClient} waiting per model)`;
    }
    return undefined;
  }

  /** Gives the next waiter its turn; false when none waits. */
  next(): boolean {
    const first = this.#priority.shift();
    if (first) {
      first.go();
      return true;
    }
    const client = this.#ring.shift();
    if (client === undefined) return false;
    const line = this.#clients.get(client)!;
    const waiter = line.shift()!;
    this.#others--;
    if (line.length > 0) this.#ring.push(client);
    else this.#clients.delete(client);
    waiter.go();
    return true;
  }

  /** Refuses every waiter with `error`. */
  failAll(error: Error): void {
    const all = [...this.#priority.splice(0)];
    for (const line of this.#clients.values()) all.push(...line);
    this.#clients.clear();
    this.#ring.length = 0;
    this.#others = 0;
    for (const waiter of all) waiter.fail(error);
  }

  #remove(caller: QueueCaller, waiter: Waiter): boolean {
    const line = caller.priority ? this.#priority : this.#clients.get(caller.client);
    const at = line?.indexOf(waiter) ?? -1;
    if (!line || at < 0) return false;
    line.splice(at, 1);
    if (!caller.priority) {
      this.#others--;
      if (line.length === 0) {
        this.#clients.delete(caller.client);
        this.#ring.splice(this.#ring.indexOf(caller.client), 1);
      }
    }
    return true;
  }

  #full(why: string): TooMany {
    return new TooMany(
      `model '${this.#model}' is busy: ${why} (inference.queueLimit); try again shortly`,
      { retryAfterSeconds: 1 },
    );
  }
}
