/**
 * A file fetched over HTTP as one stream of bytes that survives dropped and stalled connections:
 * after the source has answered, a broken or silent connection is retried with `Range` from the
 * byte where it stopped (and `If-Range`, so that a file changed meanwhile is not spliced).
 *
 * @module
 */
import { backoffDelay, type BackoffOptions } from "../async/backoff.ts";
import { DomainError, UpstreamFailed, UpstreamTimeout } from "../errors/mod.ts";
import { byobReader } from "../streams/mod.ts";
import { fetchFailure } from "./fetch_failure.ts";

/** The room offered to each read of a byte stream body. */
const READ_BYTES = 256 << 10;

/** How hard to try. */
export interface SourceOptions {
  /** Ends the transfer; its reason is thrown. */
  signal: AbortSignal;
  /** No byte for this long counts as a failure. */
  stallMs: number;
  /** Failures in a row tolerated (the count starts again whenever bytes arrive). */
  retries: number;
  /** Headers for each request (a node's signature is made again for each: it is short-lived). */
  headers?: () => Promise<Record<string, string>>;
  /** The first byte wanted: a transfer that goes on from bytes another source sent. */
  from?: number;
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

/** The watchdog's reason for aborting a connection that trickles below the minimum rate. */
class TooSlow extends Error {
  constructor(readonly bytes: number, readonly windowMs: number) {
    super(`${bytes} bytes in ${windowMs} ms`);
  }
}

/**
 * The slowest average rate accepted, in bytes per second, over each window of `stallMs` once
 * bytes flow; slower counts as a stall (abandoned, resumed, 504 after the retries).
 *
 * 1 KiB/s: a stall is "no byte for downloadStallSeconds", so a source dripping one byte a
 * second would otherwise hold a transfer (and its client streams, and a one-per-model slot)
 * forever: a 1 GB model at 1 B/s takes 30 years. No real source of model files is this slow —
 * even a 56 kbit/s modem sends 7 KiB/s, and at 1 KiB/s the smallest useful GGUF (tens of MB)
 * would take most of a day — so the floor only ever catches sources that are broken or
 * throttled to uselessness, while leaving a congested link a wide margin. A constant, not a
 * setting: a node that must wait for slower sources has no use for them anyway.
 */
export const MIN_BYTES_PER_SECOND = 1024;

/**
 * One HTTP request with a watchdog that aborts it when no byte arrives for `stallMs`, or when
 * fewer than MIN_BYTES_PER_SECOND arrive on average over a window of `stallMs` (windows start
 * at the first byte).
 *
 * The body is read through a reader the attempt holds, and aborting the attempt cancels that
 * reader, which closes the connection. Aborting fetch's signal is not enough once the response
 * has arrived: fetch follows the signal it is given through a signal of its own that the given
 * one references only weakly, and after a garbage collection the abort reached no connection
 * (a resumed download stalled for good; a DELETE left the source connection open). The
 * transfer's signal reaches the attempt through an abort listener, which is a strong reference.
 */
class Attempt {
  readonly controller = new AbortController();
  /** What fetch gets: aborted by the watchdog, by `cancel`, or by the transfer's signal. */
  readonly signal = this.controller.signal;
  readonly #outer: AbortSignal;
  readonly #onOuterAbort = () => this.controller.abort(this.#outer.reason);
  #lastActivity = Date.now();
  #windowStart: number | undefined;
  #windowBytes = 0;
  #timer: ReturnType<typeof setInterval>;
  #reader: ReadableStreamDefaultReader<Uint8Array> | ReadableStreamBYOBReader | undefined;

  constructor(stallMs: number, outer: AbortSignal) {
    this.#outer = outer;
    if (outer.aborted) this.controller.abort(outer.reason);
    else outer.addEventListener("abort", this.#onOuterAbort, { once: true });
    this.#timer = setInterval(() => {
      const now = Date.now();
      if (now - this.#lastActivity > stallMs) return this.abort(new Stalled());
      if (this.#windowStart === undefined || now - this.#windowStart < stallMs) return;
      const elapsed = now - this.#windowStart;
      if (this.#windowBytes * 1000 < MIN_BYTES_PER_SECOND * elapsed) {
        return this.abort(new TooSlow(this.#windowBytes, elapsed));
      }
      this.#windowStart = now;
      this.#windowBytes = 0;
    }, Math.min(1000, Math.max(50, stallMs / 4)));
  }

  /** Why the watchdog cut the connection, if it did. */
  get cut(): Stalled | TooSlow | undefined {
    const reason = this.signal.reason;
    return reason instanceof Stalled || reason instanceof TooSlow ? reason : undefined;
  }

  /** Counts bytes that arrived. */
  touch(bytes: number): void {
    const now = Date.now();
    this.#lastActivity = now;
    this.#windowStart ??= now;
    this.#windowBytes += bytes;
  }

  /** Aborts the request, closing its connection, and stops the watchdog. */
  abort(reason: unknown): void {
    this.controller.abort(reason);
    this.#reader?.cancel(reason).catch(() => {});
    this.stop();
  }

  /**
   * The chunks of this attempt's response body, counted by the watchdog. Throws the abort's
   * reason when the attempt is aborted; a consumer that stops early closes the connection.
   *
   * A chunk is valid until the next is asked for: a byte stream (fetch's bodies are) is read into
   * one buffer again and again. Through a 1 GiB download, a chunk allocated per read put the
   * node's peak RSS at 146-178 MB, garbage waiting for the collector.
   */
  async *read(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
    const byob = byobReader(body);
    const reader = this.#reader = byob ?? body.getReader();
    let buffer = new ArrayBuffer(READ_BYTES);
    let finished = false;
    try {
      while (true) {
        const { value, done } = byob
          ? await byob.read(new Uint8Array(buffer))
          : await (reader as ReadableStreamDefaultReader<Uint8Array>).read();
        this.signal.throwIfAborted();
        if (done) {
          finished = true;
          return;
        }
        if (byob) buffer = value.buffer as ArrayBuffer;
        this.touch(value.byteLength);
        yield value;
      }
    } finally {
      if (!finished) reader.cancel().catch(() => {});
    }
  }

  /** Stops the watchdog and lets go of the transfer's signal. */
  stop(): void {
    clearInterval(this.#timer);
    this.#outer.removeEventListener("abort", this.#onOuterAbort);
  }
}

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
  const from = options.from ?? 0;
  let attempt = new Attempt(stallMs, signal);
  const send = async (headers: Record<string, string>) => {
    attempt.stop();
    attempt = new Attempt(stallMs, signal);
    try {
      const extra = await options.headers?.();
      const answer = await fetch(url, {
        headers: { "accept-encoding": "identity", ...extra, ...headers },
        signal: attempt.signal,
        // A source with headers of its own (a node's signature, the account's token for the
        // hub) is that address or nothing: fetch would carry them across a redirect, and a peer
        // could aim this node's requests anywhere. Its 3xx is a failed source.
        redirect: options.headers ? "manual" : "follow",
      });
      return answer;
    } catch (error) {
      attempt.stop();
      throw error;
    }
  };
  const failure = (error: unknown): Error => {
    signal.throwIfAborted();
    const cut = attempt.cut;
    if (cut instanceof Stalled) {
      return new UpstreamTimeout(`the source sent no data for ${stallMs / 1000} s: ${url}`);
    }
    if (cut instanceof TooSlow) {
      const rate = Math.floor((cut.bytes * 1000) / cut.windowMs);
      return new UpstreamTimeout(
        `the source sent ${rate} B/s over ${stallMs / 1000} s, below the minimum of ` +
          `${MIN_BYTES_PER_SECOND} B/s: ${url}`,
      );
    }
    if (error instanceof DomainError || error instanceof RestartNeeded) return error;
    return new UpstreamFailed(`the connection to ${url} failed: ${fetchFailure(error)}`);
  };

  let response: Response;
  for (let failures = 0;; failures++) {
    try {
      response = await send(from > 0 ? { range: `bytes=${from}-` } : {});
    } catch (error) {
      throw failure(error);
    }
    if (response.ok && from > 0 && contentRange(response)?.start !== from) {
      await response.body?.cancel();
      attempt.stop();
      throw new RestartNeeded(`the source cannot continue from byte ${from}`);
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
  const totalSize = from > 0
    ? contentRange(response)!.total
    : length !== null && /^\d+$/.test(length)
    ? Number(length)
    : undefined;
  const etag = response.headers.get("etag");
  const validator = etag && !etag.startsWith("W/") ? etag : response.headers.get("last-modified");

  async function* chunks(): AsyncGenerator<Uint8Array> {
    let received = from;
    let failures = 0;
    // Bytes of the current attempt; the failure count starts again once an attempt has
    // delivered a window's worth at the minimum rate (a trickle must not reset it forever).
    let attemptBytes = 0;
    const healthyBytes = (MIN_BYTES_PER_SECOND * stallMs) / 1000;
    let body = response.body;
    let resumeFailure: unknown = new Error("the answer had no body");
    try {
      while (true) {
        try {
          if (!body) throw resumeFailure;
          for await (const chunk of attempt.read(body)) {
            received += chunk.byteLength;
            attemptBytes += chunk.byteLength;
            if (attemptBytes >= healthyBytes) failures = 0;
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
          // The connection is closed at once, whatever the body's reader does next.
          attempt.abort(reason);
          if (++failures > retries) throw reason;
          await sleep(backoffMs(failures), signal);
          attemptBytes = 0;
          body = await resume(received).catch((error) => {
            const resumeReason = failure(error);
            // A source that cannot continue is started over; should that be the last try, what
            // made it stop (a stall, a rate below the minimum) is what the user is told.
            if (resumeReason instanceof RestartNeeded) {
              throw new RestartNeeded(resumeReason.message, { cause: reason });
            }
            if (!(resumeReason instanceof DomainError)) throw resumeReason;
            resumeFailure = error;
            return null; // counted as one more failure on the next turn
          });
        }
      }
    } finally {
      // Ended by the reader, a failure or the transfer's signal: the connection goes with it.
      attempt.abort(new Error("the download ended"));
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
      attempt.abort(new Error("the download was cancelled"));
    },
  };
}
