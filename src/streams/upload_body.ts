/**
 * An uploaded file as its reader sees it: its bytes as they arrive, what the client declared of
 * its size and name, and the end of the body. Where it comes from (a multipart or a raw HTTP
 * body: src/http/upload_body.ts) is the edge's business; the store and mcm read this alone.
 *
 * @module
 */

/** An uploaded file as it arrives. */
export interface UploadBody {
  /**
   * The file's bytes; iterate once. Errors when the client aborts or the body is malformed. With
   * `lentChunks`, a chunk is only valid until the next one is asked for.
   */
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
