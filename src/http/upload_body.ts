/**
 * The bytes of an uploaded file, from either a `multipart/form-data` body (one named file field,
 * parsed as it streams by busboy, never buffered) or a raw `application/octet-stream` body.
 *
 * @module
 */
import busboy from "busboy";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DomainError, Invalid } from "../errors/mod.ts";

/** An uploaded file as it arrives. */
export interface UploadBody {
  /** The file's bytes; iterate once. Errors when the client aborts or the body is malformed. */
  chunks: AsyncIterable<Uint8Array>;
  /** The file's exact size, when the client declared it (Content-Length of a raw body). */
  declaredSize: number | undefined;
  /** Content-Length of the whole request, when given: an upper bound of the file's size. */
  bodyLength: number | undefined;
  /** The file name the client gave its multipart part, if any. */
  filename: string | undefined;
  /**
   * The multipart body's text fields; complete once `complete` resolves (a field may follow the
   * file).
   */
  fields: Map<string, string>;
  /**
   * Resolves once the whole request body has been read and was well formed (for multipart, the
   * closing boundary arrived); rejects with a 400 otherwise. Await it after the chunks.
   */
  complete: Promise<void>;
}

const MULTIPART_LIMITS = { files: 1, fields: 32, fieldSize: 64 * 1024, parts: 64, headerPairs: 64 };

/** Reads the upload from a raw body, or the part named `field` from a multipart body. */
export function uploadBody(request: Request, field: string): Promise<UploadBody> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!request.body) throw new Invalid("upload body is empty: send the file");
  const length = request.headers.get("content-length");
  const bodyLength = length === null ? undefined : Number(length);
  if (contentType.toLowerCase().startsWith("multipart/form-data")) {
    return multipartFile(request.body, contentType, field, bodyLength);
  }
  return Promise.resolve({
    chunks: request.body,
    declaredSize: bodyLength,
    bodyLength,
    filename: undefined,
    fields: new Map(),
    complete: Promise.resolve(),
  });
}

function badForm(error: unknown): Invalid {
  const message = error instanceof Error ? error.message : String(error);
  return new Invalid(`malformed multipart body: ${message}`);
}

/** The file part's bytes; its stream fails only for a broken body, which is the caller's 400. */
async function* formFileChunks(stream: Readable): AsyncGenerator<Uint8Array> {
  try {
    yield* stream;
  } catch (error) {
    throw error instanceof DomainError ? error : badForm(error);
  }
}

function multipartFile(
  body: ReadableStream<Uint8Array>,
  contentType: string,
  field: string,
  bodyLength: number | undefined,
): Promise<UploadBody> {
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { "content-type": contentType }, limits: MULTIPART_LIMITS });
  } catch (error) {
    throw badForm(error);
  }
  const source = Readable.fromWeb(body as import("node:stream/web").ReadableStream<Uint8Array>);
  const complete = pipeline(source, parser).catch((error) => {
    throw error instanceof DomainError ? error : badForm(error);
  });
  const fields = new Map<string, string>();
  parser.on("field", (name, value) => fields.set(name, value));
  return new Promise<UploadBody>((resolve, reject) => {
    let found = false;
    parser.on("file", (name, stream, info) => {
      if (found || name !== field) {
        stream.resume();
        return;
      }
      found = true;
      // busboy fails the file stream when the body breaks off. That can happen before the
      // consumer starts reading (a small body arrives whole while the temporary file is being
      // created), and an 'error' event nobody listens to would take the whole node down. The
      // consumer still sees the failure: through the stream's iterator and through `complete`.
      stream.on("error", () => {});
      complete.catch((error) => stream.destroy(error));
      resolve({
        chunks: formFileChunks(stream),
        declaredSize: undefined,
        bodyLength,
        filename: info.filename,
        fields,
        complete,
      });
    });
    complete.then(
      () => {
        if (!found) reject(new Invalid(`multipart body has no file field '${field}'`));
      },
      (error) => {
        if (!found) reject(error);
      },
    );
  });
}
