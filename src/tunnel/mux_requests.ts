/**
 * The requesting side of a StreamMux: sends `req` messages and turns the peer's `res` messages
 * into Responses whose bodies stream in. The hub uses it towards nodes, the node towards its
 * container processes.
 *
 * @module
 */
import type { AbortMessage, RequestMessage, ResponseMessage } from "../../gen/hub/validators.ts";
import { Invalid, UpstreamFailed } from "../errors/mod.ts";
import type { StreamMux } from "./stream_mux.ts";

/** Statuses whose responses have no body. */
const NULL_BODY = new Set([101, 204, 205, 304]);

/** A response head, its inline body in base64 (JSON messages) or as bytes (binary frames). */
export type ResponseHead = Omit<ResponseMessage, "inline"> & { inline?: string | Uint8Array };

/** A request's head without the fields the mux fills in. */
export type RequestHead = Omit<RequestMessage, "t" | "s" | "body" | "inline">;

/** Requests in flight over one mux. */
export class MuxRequests {
  readonly #mux: StreamMux;
  readonly #pending = new Map<number, PromiseWithResolvers<Response>>();
  readonly #made: ((response: Response, head: ResponseHead) => void) | undefined;
  #nextStream = 1;

  /**
   * `made`: sees each Response as it is made from its head, before anyone awaits it (the hub
   * marks what its pipeline need not read from the Response's headers).
   */
  constructor(mux: StreamMux, made?: (response: Response, head: ResponseHead) => void) {
    this.#mux = mux;
    this.#made = made;
  }

  /** Requests waiting for their response head. */
  get waiting(): number {
    return this.#pending.size;
  }

  /** Sends a request on a new stream; returns the stream and its response to come. */
  send(
    head: RequestHead,
    body: ReadableStream<Uint8Array> | Uint8Array | null,
  ): { stream: number; response: Promise<Response> } {
    const stream = this.#nextStream++;
    const answer = Promise.withResolvers<Response>();
    this.#pending.set(stream, answer);
    this.#mux.send(stream, { t: "req", s: stream, ...head, body: body !== null }, body).catch(
      (error) => {
        // The client's body broke (it went away). If nobody answered yet, nobody waits.
        this.#settle(stream)?.reject(
          new Invalid(`the request body failed: ${(error as Error).message}`),
        );
      },
    );
    return { stream, response: answer.promise };
  }

  /** A response head from the peer; its body follows on the same stream. */
  onResponse(message: ResponseHead): void {
    const pending = this.#settle(message.s);
    if (!pending) return;
    const body = this.#mux.bodyOf(message.s, message);
    try {
      let response: Response;
      if (NULL_BODY.has(message.status)) {
        if (body instanceof ReadableStream) body.cancel().catch(() => {});
        response = new Response(null, { status: message.status, headers: message.headers });
      } else {
        response = new Response(body, { status: message.status, headers: message.headers });
      }
      this.#made?.(response, message);
      pending.resolve(response);
    } catch (error) {
      this.#mux.cancel(message.s, "the response is malformed");
      pending.reject(new UpstreamFailed(`malformed response: ${(error as Error).message}`));
    }
  }

  /** The peer aborted a stream: a request still waiting for its head fails with 502. */
  onAbort(message: AbortMessage, peer: string): void {
    this.#settle(message.s)?.reject(
      new UpstreamFailed(`${peer} aborted the request: ${message.message}`),
    );
    this.#mux.onControl(message);
  }

  /**
   * Gives up on `stream`: a request still waiting for its head fails with `error`, and the
   * stream is cancelled both ways (a body still streaming is cut off).
   */
  abandon(stream: number, error: Error): void {
    this.#settle(stream)?.reject(error);
    this.#mux.cancel(stream, error.message);
  }

  /** Fails every request waiting for its head (the connection is gone). */
  failAll(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  #settle(stream: number): PromiseWithResolvers<Response> | undefined {
    const pending = this.#pending.get(stream);
    this.#pending.delete(stream);
    return pending;
  }
}
