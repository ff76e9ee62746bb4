/**
 * What the log says when a peer's check fails: the cause in a word a user can act on (refused,
 * timeout, DNS, TLS, bad proof), and a bounded number of lines. A busy LAN, or a test suite on
 * the same machine, has many peers that come and go; one line each, for ever, buries the rest
 * of the log.
 *
 * @module
 */
import { ProofError } from "../identity/node_proof.ts";

/** How long one peer's failure, with the same cause, stays unsaid after it was printed. */
export const REPEAT_AFTER_MS = 10 * 60_000;
/** Lines about failed checks a window may print; the rest are counted. */
export const LINES_PER_WINDOW = 5;
/** The window of that budget. */
export const WINDOW_MS = 60_000;
/** Peers remembered (a LAN has far fewer; past it the memory starts again). */
const MAX_REMEMBERED = 1024;

/** How deep the causes of an error are followed (a cycle of causes would never end). */
const CAUSE_DEPTH = 5;

/** The innermost message of an error and its causes, at most CAUSE_DEPTH deep. */
function innermost(error: unknown): string {
  let current = error;
  for (let depth = 0; depth < CAUSE_DEPTH; depth++) {
    if (!(current instanceof Error) || current.cause === undefined) break;
    current = current.cause;
  }
  return current instanceof Error ? current.message : String(current);
}

/**
 * Why a check of a peer failed, as the log says it: "connection refused", "timeout (no answer
 * in 3 s)", "DNS lookup failed", "TLS failed: …", "no valid proof: …", or the innermost message.
 */
export function checkFailureCause(error: unknown, timeoutMs = 3000): string {
  if (error instanceof ProofError) return `no valid proof: ${error.message}`;
  const name = (error as Error)?.name;
  if (name === "TimeoutError" || name === "AbortError") {
    return `timeout (no answer in ${timeoutMs / 1000} s)`;
  }
  const detail = innermost(error);
  if (/connection refused/i.test(detail)) return "connection refused";
  if (/connection reset/i.test(detail)) return "connection reset";
  if (/dns error|failed to lookup|name or service not known/i.test(detail)) {
    return "DNS lookup failed";
  }
  if (/tls|certificate|handshake|corrupt message/i.test(detail)) return `TLS failed: ${detail}`;
  if (/unreachable/i.test(detail)) return "network unreachable";
  return detail;
}

/** Options of a CheckFailureLog (tests shorten the times and read the lines). */
export interface CheckFailureLogOptions {
  print?: (line: string) => void;
  now?: () => number;
}

/**
 * The log of failed peer checks: a peer's failure once per cause and REPEAT_AFTER_MS, at most
 * LINES_PER_WINDOW lines a WINDOW_MS, and then one line counting those left unsaid.
 */
export class CheckFailureLog {
  readonly #print: (line: string) => void;
  readonly #now: () => number;
  /** The cause last printed for each peer, and when. */
  readonly #said = new Map<string, { cause: string; at: number }>();
  #window = { startedAt: -Infinity, lines: 0, unsaid: 0, causes: new Map<string, number>() };

  constructor(options: CheckFailureLogOptions = {}) {
    this.#print = options.print ?? console.log;
    this.#now = options.now ?? Date.now;
  }

  /** A check of `peer` (an id, or `peer at URL`) failed because of `cause`. */
  failed(peer: string, cause: string): void {
    const now = this.#now();
    const said = this.#said.get(peer);
    if (said && said.cause === cause && now - said.at < REPEAT_AFTER_MS) return;
    if (now - this.#window.startedAt >= WINDOW_MS) this.#newWindow(now);
    if (this.#said.size >= MAX_REMEMBERED) this.#said.clear();
    this.#said.set(peer, { cause, at: now });
    if (this.#window.lines < LINES_PER_WINDOW) {
      this.#window.lines++;
      this.#print(`discovery: not listing ${peer}: ${cause}`);
      return;
    }
    this.#window.unsaid++;
    const short = cause.replace(/:.*/, "");
    this.#window.causes.set(short, (this.#window.causes.get(short) ?? 0) + 1);
  }

  /** A check of `peer` succeeded: its next failure is news. */
  succeeded(peer: string): void {
    this.#said.delete(peer);
    this.checking();
  }

  /**
   * A check starts: a window that ended with failures left unsaid prints their count now, not
   * only when a failure comes next (which may be never, or hours later).
   */
  checking(): void {
    const now = this.#now();
    if (this.#window.unsaid > 0 && now - this.#window.startedAt >= WINDOW_MS) {
      this.#newWindow(-Infinity);
    }
  }

  /**
   * Prints the count of the failures the ending window left unsaid, if any; starts a new one at
   * `now` (-Infinity: at the next failure).
   */
  #newWindow(now: number): void {
    const { unsaid, causes } = this.#window;
    if (unsaid > 0) {
      const counts = [...causes].map(([cause, count]) => `${count} ${cause}`).join(", ");
      this.#print(
        `discovery: ${unsaid} more peer ${unsaid === 1 ? "check" : "checks"} failed in the last ` +
          `${WINDOW_MS / 60_000} min (${counts}); not listed`,
      );
    }
    this.#window = { startedAt: now, lines: 0, unsaid: 0, causes: new Map() };
  }
}
