/**
 * A file fetched over HTTP as one stream of bytes that survives dropped and stalled connections:
 * after the source has answered, a broken or silent connection is retried with `Range` from the
 * byte where it stopped (and `If-Range`, so that a file changed meanwhile is not spliced).
 *
 * @module
 */
import { backoffDelay, type BackoffOptions } from "../async/backoff.ts";
import { DomainError, UpstreamFailed, UpstreamTimeout } from "../errors/mod.ts";

/** How hard to try. */
export interface SourceOptions {
  /** Ends the transfer; its reason is thrown. */
  signal: AbortSignal;
  /** No byte for this long counts as a failure. */
  stallMs: number;
  /** Failures in a row tolerated (the count starts again whenever bytes arrive). */
  retries: number;
}

/** An opened source: its size when announced, and its bytes. */
export interface Source {
  totalSize: number | undefined;
  chunks: AsyncIterable<Uint8Array>;
  /** Stops reading and releases the connection. */
  cancel(): void;
}

/** The source cannot continue where it stopped (it ignored Range, or the file changed). */
export class RestartNeeded extends Error {
  override name = "RestartNeeded";
}

/** The watchdog's reason for aborting a silent connection. */
class Stalled extends Error {}

/** Statuses worth asking again for. */
const TRANSIENT_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

/** Back-off before retry `n` (1-based): 0.5 s doubling, at most 8 s. */
const RETRY_BACKOFF: BackoffOptions = { minTimeout: 500, maxTimeout: 8000 };
const backoffMs = (n: number) => backoffDelay(n, RETRY_BACKOFF);

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** One HTTP request with a watchdog that aborts it when no byte arrives for `stallMs`. */
class Attempt {
  readonly controller = new AbortController();
  #lastActivity = Date.now();
  #timer: ReturnType<typeof setInterval>;

  constructor(stallMs: number) {
    this.#timer = setInterval(() => {
      if (Date.now() - this.#lastActivity > stallMs) this.controller.abort(new Stalled());
    }, Math.min(1000, Math.max(50, stallMs / 4)));
  }

  get stalled(): boolean {
    return this.controller.signal.reason instanceof Stalled;
  }

  touch(): void {
    this.#lastActivity = Date.now();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

function sourceError(url: string, response: Response): UpstreamFailed {
  return new UpstreamFailed(
    `the source answered ${response.status} ${response.statusText || ""}`.trimEnd() + ` for ${url}`,
  );
}

/** The first byte of a 206 answer and the full size, from `Content-Range: bytes a-b/total`. */
function contentRange(response: Response): { start: number; total?: number } | undefined {
  const match = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(response.headers.get("content-range") ?? "");
  if (!match) return undefined;
  return { start: Number(match[1]), total: match[2] === "*" ? undefined : Number(match[2]) };
}

/**
 * Opens `url`. Fails at once when the source cannot be reached or answers a client error;
 * retries 408, 429 and 5xx answers; once it has answered, `chunks` resumes broken transfers.
 */
export async function openSource(url: string, options: SourceOptions): Promise<Source> {
  const { signal, stallMs, retries } = options;
  let attempt = new Attempt(stallMs);
  const send = async (headers: Record<string, string>) => {
    attempt.stop();
    attempt = new Attempt(stallMs);
    try {
      return await fetch(url, {
        headers: { "accept-encoding": "identity", ...headers },
        signal: AbortSignal.any([signal, attempt.controller.signal]),
      });
    } catch (error) {
      attempt.stop();
      throw error;
    }
  };
  const failure = (error: unknown): Error => {
    signal.throwIfAborted();
    if (attempt.stalled) {
      return new UpstreamTimeout(`the source sent no data for ${stallMs / 1000} s: ${url}`);
    }
    if (error instanceof DomainError || error instanceof RestartNeeded) return error;
    return new UpstreamFailed(`the connection to ${url} failed: ${(error as Error).message}`);
  };

  let response: Response;
  for (let failures = 0;; failures++) {
    try {
      response = await send({});
    } catch (error) {
      throw failure(error);
    }
    if (response.ok) break;
    await response.body?.cancel();
    attempt.stop();
    if (!TRANSIENT_STATUSES.has(response.status) || failures >= retries) {
      throw sourceError(url, response);
    }
    await sleep(backoffMs(failures + 1), signal);
  }

  const length = response.headers.get("content-length");
  const totalSize = length !== null && /^\d+$/.test(length) ? Number(length) : undefined;
  const etag = response.headers.get("etag");
  const validator = etag && !etag.startsWith("W/") ? etag : response.headers.get("last-modified");

  async function* chunks(): AsyncGenerator<Uint8Array> {
    let received = 0;
    let failures = 0;
    let body = response.body;
    let resumeFailure: unknown = new Error("the answer had no body");
    try {
      while (true) {
        try {
          if (!body) throw resumeFailure;
          for await (const chunk of body) {
            attempt.touch();
            received += chunk.byteLength;
            failures = 0;
            yield chunk;
          }
          if (totalSize === undefined || received >= totalSize) return;
          throw new Error(`the connection closed after ${received} of ${totalSize} bytes`);
        } catch (error) {
          const reason = failure(error);
          if (
            reason instanceof DomainError && !(reason instanceof UpstreamFailed) &&
            !(reason instanceof UpstreamTimeout)
          ) {
            throw reason;
          }
          if (++failures > retries) throw reason;
          await sleep(backoffMs(failures), signal);
          body = await resume(received).catch((error) => {
            const reason = failure(error);
            if (reason instanceof RestartNeeded || !(reason instanceof DomainError)) throw reason;
            resumeFailure = error;
            return null; // counted as one more failure on the next turn
          });
        }
      }
    } finally {
      attempt.stop();
    }
  }

  /** The rest of the file from byte `from`, or RestartNeeded. */
  async function resume(from: number): Promise<ReadableStream<Uint8Array<ArrayBuffer>> | null> {
    const resumed = await send(
      from === 0
        ? {}
        : { range: `bytes=${from}-`, ...(validator ? { "if-range": validator } : {}) },
    );
    const range = resumed.status === 206 ? contentRange(resumed) : undefined;
    const sameLength = resumed.headers.get("content-length") === length;
    const sameTotal = range?.total === undefined || totalSize === undefined ||
      range.total === totalSize;
    if (
      (range && range.start === from && sameTotal) ||
      (from === 0 && resumed.status === 200 && sameLength)
    ) {
      return resumed.body;
    }
    await resumed.body?.cancel();
    if (resumed.status === 200 || resumed.status === 206 || resumed.status === 416) {
      throw new RestartNeeded(`the source cannot continue from byte ${from}`);
    }
    if (TRANSIENT_STATUSES.has(resumed.status)) throw new Error(`status ${resumed.status}`);
    throw sourceError(url, resumed);
  }

  return {
    totalSize,
    chunks: chunks(),
    cancel() {
      attempt.stop();
      response.body?.cancel().catch(() => {});
    },
  };
}
