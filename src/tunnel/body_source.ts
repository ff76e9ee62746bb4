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
  /**
   * The next piece, at most `size` bytes when the body is read into frames. The caller reads
   * one piece at a time: a read starts once the one before it settled.
   */
  read(size: number): Promise<ReadableStreamReadResult<Uint8Array>>;
  /**
   * The body streams (it was not complete within a turn): from the next read on, a byte stream
   * is read straight into frames.
   */
  streams(): void;
  /** Stops reading: the body's source is cancelled with `error` as the reason. */
  cancel(error: unknown): void;
}

/**
 * Reads `body` in pieces: with a default reader first, which takes a Response's complete body
 * (a string, bytes) as it is. Once the caller says the body streams, and with `frameSpace` (a
 * codec that frames in place), a byte stream (a file, a socket) is read straight into the frame
 * that will carry each piece, whose buffer is added to `inPlace`: one buffer per piece and no
 * copy, where a default reader allocates, zeroes and copies each piece. Other streams go on as
 * they came. Asking a complete body for a BYOB reader first cost a tenth of a node's time per
 * tunnelled request (the TypeError that says it is not a byte stream), and only streamed
 * bodies gain from one.
 */
export function bodySource(
  body: ReadableStream<Uint8Array>,
  frameSpace: ((size: number) => Uint8Array) | undefined,
  inPlace: WeakSet<ArrayBufferLike>,
): BodySource {
  let reader = body.getReader();
  let byob: ReadableStreamBYOBReader | undefined;
  let streams = false;
  // Each read allocates (and zeroes) the room it offers, so a source that hands over less at a
  // time (a socket) is offered little more than it gave; one that fills it (a file) twice as
  // much next time, up to `size`.
  let offer = MIN_OFFER;
  const readInPlace = async (size: number) => {
    const room = Math.min(size, offer);
    const result = await byob!.read(frameSpace!(room) as Uint8Array<ArrayBuffer>);
    if (result.done) return result as ReadableStreamReadResult<Uint8Array>;
    inPlace.add(result.value.buffer);
    const got = result.value.length;
    offer = got === room ? offer * 2 : Math.max(MIN_OFFER, got * 2);
    return result;
  };
  return {
    read: (size) => {
      if (byob) return readInPlace(size);
      if (streams && frameSpace) {
        // No read is pending (see read's contract): the lock can change hands.
        streams = false;
        reader.releaseLock();
        try {
          byob = body.getReader({ mode: "byob" });
          return readInPlace(size);
        } catch {
          // Not a byte stream.
          reader = body.getReader();
        }
      }
      return reader.read();
    },
    streams: () => {
      streams = !byob;
    },
    cancel: (error) => (byob ?? reader).cancel(error).catch(() => {}),
  };
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
