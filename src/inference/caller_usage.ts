/**
 * What each caller of the engine used, and the budget of engine time that microservices' detached
 * calls draw from.
 *
 * A caller is the node's key holder (every request of the OpenAI-compatible API, whose callers
 * hold the node's key: id {@link KEY_HOLDER}) or one microservice container (`container:<id>`).
 * Engine time is the time a request held its model: from its turn to its end (prompt evaluation
 * and generation, or the embedding), which no other request of that model could use.
 *
 * Detached calls (a container's `context.ml` calls made outside any request it serves, or with a
 * signal of their own, so that nothing ends them with a request) draw from a budget per
 * container: `detachedEngineSeconds` of engine time, refilled evenly over
 * `detachedWindowSeconds`. A detached call that finds the budget spent is refused (429 naming
 * the budget, with the seconds until it refills); one that runs is stopped when it would overdraw
 * it.
 *
 * @module
 */
import { TooMany } from "../errors/mod.ts";

/** The accounting id of the node's key holder. */
export const KEY_HOLDER = "key-holder";

/** The accounting id of a microservice container. */
export function containerCaller(container: string): string {
  return `container:${container}`;
}

/** Who asks for inference: the queue's turn and the accounting follow it (caller_usage.ts). */
export interface InferenceCaller {
  /** The accounting id: KEY_HOLDER, or containerCaller(id). */
  id: string;
  /** The round robin's unit among microservices: the container's client. */
  client: string;
  /** The key holder: served before microservices, in places of its own. */
  priority: boolean;
  /** A call nothing ends with a request: it draws from the detached budget. */
  detached: boolean;
}

/** The API's callers: they hold the node's key. */
export const KEY_HOLDER_CALLER: InferenceCaller = Object.freeze({
  id: KEY_HOLDER,
  client: KEY_HOLDER,
  priority: true,
  detached: false,
});

/** What one caller used since the node started. */
export interface CallerUsage {
  /** Chat completions and embeddings that ran (refused ones are not counted). */
  requests: number;
  promptTokens: number;
  completionTokens: number;
  /** Milliseconds the caller's requests held a model (see the module). */
  engineMs: number;
  /** Detached calls' engine milliseconds (within engineMs). */
  detachedEngineMs: number;
  /** Detached calls refused or stopped because the budget was spent. */
  budgetRefusals: number;
  /** A container's own files loaded now (caller_files.ts); absent when none. */
  loadedFiles?: LoadedCallerFile[];
}

/** A container's own file loaded now (caller_files.ts), as its record shows it. */
export interface LoadedCallerFile {
  /** Its name in the container's storage. */
  name: string;
  /** Bytes the engine estimated (weights and context), counted in the node's memory budget. */
  estimatedBytes: number;
  contextSize: number;
  /** Unix seconds. */
  loadedAt: number;
}

/** The detached-call budget's settings. */
export interface DetachedBudget {
  /** Engine seconds a container's detached calls may use at once; 0: no detached calls. */
  engineSeconds: number;
  /** Over how many seconds a spent budget refills. */
  windowSeconds: number;
}

interface Account {
  usage: CallerUsage;
  /** Detached engine ms left, as of `at`. */
  balance: number;
  at: number;
}

/** Callers' figures and their detached budgets. */
export class CallerLedger {
  readonly #accounts = new Map<string, Account>();
  readonly #budget: DetachedBudget;

  /** A ledger with `budget` for each container's detached calls. */
  constructor(budget: DetachedBudget) {
    this.#budget = budget;
  }

  /** Every caller's figures. */
  all(): Map<string, CallerUsage> {
    return new Map([...this.#accounts].map(([id, account]) => [id, { ...account.usage }]));
  }

  /** One caller's figures (zeros when it never called). */
  of(caller: string): CallerUsage {
    const account = this.#accounts.get(caller);
    return account ? { ...account.usage } : emptyUsage();
  }

  /** Forgets a caller (a container that was deleted). */
  forget(caller: string): void {
    this.#accounts.delete(caller);
  }

  /**
   * The engine ms a detached call of `caller` may use now; throws TooMany (429) when the budget
   * is spent.
   */
  detachedAllowance(caller: string): number {
    const account = this.#account(caller);
    const left = this.#refill(account);
    if (left >= 1) return left;
    account.usage.budgetRefusals++;
    const capacity = this.#budget.engineSeconds * 1000;
    const perMs = capacity / (this.#budget.windowSeconds * 1000);
    const wait = perMs > 0 ? Math.max(1, Math.ceil((1 - left) / perMs / 1000)) : 3600;
    throw new TooMany(
      `this container's budget for detached inference is spent: calls made outside a request ` +
        `(from a timer or a promise of its own, or with a signal of their own) may use ` +
        `${this.#budget.engineSeconds} s of engine time per ${this.#budget.windowSeconds} s ` +
        `(inference.detachedEngineSeconds); retry in ${wait} s, or make the call while serving ` +
        `a request`,
      { retryAfterSeconds: wait },
    );
  }

  /** Counts a request that ran: its tokens and the ms it held its model. */
  record(
    caller: string,
    figures: { promptTokens: number; completionTokens: number; engineMs: number },
    detached: boolean,
  ): void {
    const account = this.#account(caller);
    const usage = account.usage;
    usage.requests++;
    usage.promptTokens += figures.promptTokens;
    usage.completionTokens += figures.completionTokens;
    usage.engineMs += Math.round(figures.engineMs);
    if (detached) {
      usage.detachedEngineMs += Math.round(figures.engineMs);
      this.#refill(account);
      account.balance -= figures.engineMs;
    }
  }

  /** A detached call was stopped because it reached the budget. */
  stopped(caller: string): void {
    this.#account(caller).usage.budgetRefusals++;
  }

  /**
   * Runs `work` as `caller`'s turn on a model: its engine time and tokens are counted, and a
   * detached caller's work is stopped (through `stop`) when it reaches the budget left.
   */
  async metered<T>(
    caller: InferenceCaller,
    work: (stop: AbortSignal) => Promise<
      { value: T; promptTokens: number; completionTokens?: number }
    >,
  ): Promise<T> {
    const started = performance.now();
    const stop = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (caller.detached) {
      // Checked again at its turn: other calls of the container may have spent it meanwhile.
      const allowance = this.detachedAllowance(caller.id);
      timer = setTimeout(() => {
        this.stopped(caller.id);
        stop.abort();
      }, allowance);
    }
    let figures = { promptTokens: 0, completionTokens: 0 };
    try {
      const done = await work(stop.signal);
      figures = { promptTokens: done.promptTokens, completionTokens: done.completionTokens ?? 0 };
      return done.value;
    } finally {
      clearTimeout(timer);
      this.record(
        caller.id,
        { ...figures, engineMs: performance.now() - started },
        caller.detached,
      );
    }
  }

  #account(caller: string): Account {
    let account = this.#accounts.get(caller);
    if (!account) {
      account = {
        usage: emptyUsage(),
        balance: this.#budget.engineSeconds * 1000,
        at: performance.now(),
      };
      this.#accounts.set(caller, account);
    }
    return account;
  }

  /** Adds what the time since the last look refilled; returns the balance. */
  #refill(account: Account): number {
    const now = performance.now();
    const capacity = this.#budget.engineSeconds * 1000;
    const window = this.#budget.windowSeconds * 1000;
    if (window > 0) {
      account.balance = Math.min(
        capacity,
        account.balance + ((now - account.at) * capacity) / window,
      );
    }
    account.at = now;
    return account.balance;
  }
}

function emptyUsage(): CallerUsage {
  return {
    requests: 0,
    promptTokens: 0,
    completionTokens: 0,
    engineMs: 0,
    detachedEngineMs: 0,
    budgetRefusals: 0,
  };
}
