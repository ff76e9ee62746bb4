/**
 * The file part of a `multipart/form-data` body, parsed by busboy as the body streams in, never
 * buffered. The body is read here and written to the parser one chunk at a time, and the file's
 * bytes are taken from the parser as it finds them: reading is driven by the consumer of the
 * file's chunks, so a slow disk holds the client back instead of filling memory.
 *
 * @example
 * ```ts
 * import { multipartUpload } from "./multipart_upload.ts";
 * const form = new FormData();
 * form.append("file", new Blob(["GGUF..."]), "m.gguf");
 * const request = new Request("http://localhost/", { method: "POST", body: form });
 * const type = request.headers.get("content-type")!;
 * const file = await multipartUpload(request.body!, type, "file", { lentChunks: false });
 * for await (const chunk of file.chunks) console.log(chunk.byteLength);
 * await file.complete;
 * ```
 *
 * @module
 */
import busboy from "busboy";
import { Buffer } from "node:buffer";
import type { Readable } from "node:stream";
import { DomainError, Invalid } from "../errors/mod.ts";
import { byobReader } from "../streams/mod.ts";

/** The file part of a multipart body, as it arrives. */
export interface MultipartUpload {
  /** The file's bytes; iterate once. Lent (see `lentChunks`) when the caller asked for it. */
  chunks: AsyncIterable<Uint8Array>;
  /** The file name the client gave its part, if any. */
  filename: string | undefined;
  /** The body's text fields; complete once `complete` resolves (a field may follow the file). */
  fields: Map<string, string>;
  /** Resolves once the rest of the body is read and well formed; rejects with a 400 otherwise. */
  complete: Promise<void>;
}

const MULTIPART_LIMITS = { files: 1, fields: 32, fieldSize: 64 * 1024, parts: 64, headerPairs: 64 };

/**
 * Bytes read from the body at a time into the lent buffer. 1 GiB multipart uploads on the 2-core
 * VM peaked at 138-142 MB of RSS with 64, 256 and 512 KiB alike (a read returns what the
 * connection has, seldom more than 64 KiB), so the smallest.
 */
const READ_BYTES = 64 << 10;

/** A 400 for a body busboy cannot parse, or that broke off. */
function badForm(error: unknown): Error {
  if (error instanceof DomainError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new Invalid(`malformed multipart body: ${message}`);
}

/**
 * Reads `body` until the part named `field` begins and returns its file. With `lentChunks`, each
 * chunk is lent: it is only valid until the next one is asked for (the caller copies it, as a
 * file sink does), and the body is read into one buffer used again and again. Otherwise every
 * chunk is the caller's to keep.
 */
export async function multipartUpload(
  body: ReadableStream<Uint8Array>,
  contentType: string,
  field: string,
  options: { lentChunks: boolean },
): Promise<MultipartUpload> {
  const form = new FormReader(body, contentType, field, options.lentChunks);
  try {
    await form.untilFile();
  } catch (error) {
    form.abandon();
    throw badForm(error);
  }
  return form.upload;
}

/** The file part, once it began. */
interface FilePart {
  filename: string | undefined;
  /** busboy found the part's end. */
  ended: boolean;
}

/** One multipart body being read, written to busboy and taken apart. */
class FormReader {
  readonly fields = new Map<string, string>();
  readonly #field: string;
  readonly #parser: busboy.Busboy;
  readonly #byob: ReadableStreamBYOBReader | undefined;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  readonly #complete = Promise.withResolvers<void>();
  /** The file's chunks that the parser found and the consumer has not had yet. */
  readonly #queue: Uint8Array[] = [];
  #file: FilePart | undefined;
  /** The buffer for the next BYOB read, when nothing the parser keeps points into it. */
  #spare: Uint8Array | undefined;
  #error: unknown;
  #onError: ((error: unknown) => void) | undefined;

  constructor(body: ReadableStream<Uint8Array>, contentType: string, field: string, lend: boolean) {
    this.#field = field;
    try {
      this.#parser = busboy({ headers: { "content-type": contentType }, limits: MULTIPART_LIMITS });
    } catch (error) {
      throw badForm(error);
    }
    // Nobody may be waiting for `complete` (the consumer failed first): not an unhandled error.
    this.#complete.promise.catch(() => {});
    this.#parser.on("field", (name, value) => this.fields.set(name, value));
    this.#parser.on("file", (name, stream, info) => this.#onFile(name, stream, info.filename));
    this.#parser.on("error", (error) => {
      this.#error ??= error;
      this.#onError?.(error);
    });
    this.#byob = lend ? byobReader(body) : undefined;
    this.#reader = this.#byob ? undefined : body.getReader();
  }

  /** What the caller gets once the file has begun. */
  get upload(): MultipartUpload {
    return {
      chunks: this.#chunks(),
      filename: this.#file!.filename,
      fields: this.fields,
      complete: this.#complete.promise,
    };
  }

  /** Reads until the file part begins; rejects when the body ends before it. */
  async untilFile(): Promise<void> {
    while (!this.#file) {
      if (!await this.#step()) {
        await this.#end();
        throw new Invalid(`multipart body has no file field '${this.#field}'`);
      }
    }
  }

  /** Stops reading and parsing: the consumer gave up, or the body failed. */
  abandon(reason: Error = new Invalid("the multipart body was not read to its end")): void {
    this.#byob?.cancel().catch(() => {});
    this.#reader?.cancel().catch(() => {});
    this.#parser.destroy();
    this.#complete.reject(reason);
  }

  #onFile(name: string, stream: Readable, filename: string | undefined): void {
    if (this.#file || name !== this.#field) {
      stream.resume(); // another part: read and dropped
      return;
    }
    const file: FilePart = { filename, ended: false };
    this.#file = file;
    // The file's chunks are taken as busboy pushes them, during the write of the body chunk that
    // holds them, instead of being queued in a Readable: the chunks are views of that body chunk,
    // and the buffer is read into again only once the consumer has had every one of them. The end
    // goes through to the stream, whose 'end' busboy waits for before it finishes.
    const push = stream.push.bind(stream);
    stream.push = (chunk: unknown) => {
      if (chunk === null) {
        file.ended = true;
        push(null);
        stream.resume();
      } else {
        this.#queue.push(chunk as Uint8Array);
      }
      return true;
    };
    // busboy destroys the stream with the body's error, which reaches the consumer through the
    // parser: an 'error' event nobody listened to would take the whole node down.
    stream.on("error", () => {});
  }

  /** The file's chunks; at the file's end, the rest of the body is read for `complete`. */
  async *#chunks(): AsyncGenerator<Uint8Array> {
    let failure: Error = new Invalid("the multipart body was not read to its end");
    let done = false;
    try {
      while (true) {
        while (this.#queue.length > 0) yield this.#queue.shift()!;
        if (this.#file!.ended) break;
        if (!await this.#step()) {
          await this.#end(); // throws: the form ended inside the file
          throw new Invalid("malformed multipart body: Unexpected end of form");
        }
      }
      done = true;
    } catch (error) {
      failure = badForm(error);
      throw failure;
    } finally {
      // The rest runs on its own (it settles `complete`): the caller may finish its file meanwhile.
      if (done) this.#rest();
      else this.abandon(failure);
    }
  }

  /** Reads the rest of the body after the file (a field may follow it) and ends the parser. */
  async #rest(): Promise<void> {
    try {
      while (await this.#step());
      await this.#end();
      this.#complete.resolve();
    } catch (error) {
      this.abandon(badForm(error));
    }
  }

  /** Reads one chunk of the body and parses it; false at the body's end. */
  async #step(): Promise<boolean> {
    const chunk = await this.#read();
    if (!chunk) return false;
    const { buffer, byteOffset, byteLength } = chunk;
    await this.#settled((resolve, reject) => {
      this.#parser.write(
        Buffer.from(buffer, byteOffset, byteLength),
        (error) => error ? reject(error) : resolve(),
      );
    });
    // Read into the same buffer next only while the file goes on: the parser then keeps nothing
    // of this chunk but what went to the queue, which the consumer has had by the next read.
    // Anything else it takes (a field's bytes) may be a view of the chunk, so a new buffer.
    if (this.#byob && this.#file && !this.#file.ended) {
      this.#spare = new Uint8Array(buffer as ArrayBuffer);
    }
    return true;
  }

  async #read(): Promise<Uint8Array | undefined> {
    if (this.#reader) {
      const { value, done } = await this.#reader.read();
      return done ? undefined : value;
    }
    const into = this.#spare ?? new Uint8Array(READ_BYTES);
    this.#spare = undefined;
    const { value, done } = await this.#byob!.read(into);
    return done ? undefined : value;
  }

  /** Ends the parser; resolves once it checked the form's end (and every part ended). */
  #end(): Promise<void> {
    return this.#settled((resolve) => {
      this.#parser.once("finish", resolve);
      this.#parser.end();
    });
  }

  /** A promise of `start`'s outcome that also rejects when the parser fails meanwhile. */
  #settled(
    start: (resolve: () => void, reject: (error: unknown) => void) => void,
  ): Promise<void> {
    if (this.#error) return Promise.reject(this.#error);
    return new Promise<void>((resolve, reject) => {
      this.#onError = reject;
      start(resolve, reject);
    }).finally(() => this.#onError = undefined);
  }
}
