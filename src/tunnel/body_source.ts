/**
 * Reading a body to send it through a StreamMux. This module runs inside container processes
 * too: it imports nothing.
 *
 * @module
 */

/** The smallest room offered to a byte stream's read. */
const MIN_OFFER = 16 * 1024;

/** A body being sent, read in pieces. */
export interface BodySource {
  /** The next piece, at most `size` bytes when the body is read into frames. */
  read(size: number): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** Stops reading: the body's source is cancelled with `error` as the reason. */
  cancel(error: unknown): void;
}

/**
 * Reads `body` in pieces. With `frameSpace` (a codec that frames in place) and a byte stream (a
 * file, a socket), each piece is read straight into the frame that will carry it, and its buffer
 * is added to `inPlace`: one buffer per piece and no copy, where a default reader allocates,
 * zeroes and copies each piece. Other streams are read as they come.
 */
export function bodySource(
  body: ReadableStream<Uint8Array>,
  frameSpace: ((size: number) => Uint8Array) | undefined,
  inPlace: WeakSet<ArrayBufferLike>,
): BodySource {
  if (frameSpace) {
    let reader: ReadableStreamBYOBReader | undefined;
    try {
      reader = body.getReader({ mode: "byob" });
    } catch {
      // Not a byte stream.
    }
    if (reader) {
      const byob = reader;
      // Each read allocates (and zeroes) the room it offers, so a source that hands over less at
      // a time (a socket) is offered little more than it gave; one that fills it (a file) twice
      // as much next time, up to `size`.
      let offer = MIN_OFFER;
      return {
        read: async (size) => {
          const room = Math.min(size, offer);
          const result = await byob.read(frameSpace(room) as Uint8Array<ArrayBuffer>);
          if (result.done) return result as ReadableStreamReadResult<Uint8Array>;
          inPlace.add(result.value.buffer);
          const got = result.value.length;
          offer = got === room ? offer * 2 : Math.max(MIN_OFFER, got * 2);
          return result;
        },
        cancel: (error) => byob.cancel(error).catch(() => {}),
      };
    }
  }
  const reader = body.getReader();
  return { read: () => reader.read(), cancel: (error) => reader.cancel(error).catch(() => {}) };
}

let turnEnd: Promise<undefined> | undefined;

/**
 * Resolves after the current task (and its microtasks): whether a body is complete within this
 * turn. Every caller of one turn shares one timer: under load a timer per response was a
 * visible part of the node's time per request.
 */
export function nextTask(): Promise<undefined> {
  turnEnd ??= new Promise((resolve) =>
    setTimeout(() => {
      turnEnd = undefined;
      resolve(undefined);
    }, 0)
  );
  return turnEnd;
}
