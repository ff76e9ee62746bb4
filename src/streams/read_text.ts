/**
 * Reading a body (a request's, a fetch's answer) as text within a size limit, refused as too
 * large before or while it is read.
 *
 * @example
 * ```ts
 * import { readText } from "./read_text.ts";
 *
 * const text = await readText(new Response("hello"), 1024, "answer");
 * console.assert(text === "hello");
 * ```
 *
 * @module
 */
import { TooLarge } from "../errors/mod.ts";

/** Reads a body as text, refusing (413) one larger than `limit` bytes before or while reading. */
export async function readText(
  request: Request | Response,
  limit: number,
  what = "body",
): Promise<string> {
  const tooLarge = () => new TooLarge(`${what} is larger than ${limit} bytes`);
  const declared = request.headers.get("content-length");
  if (Number(declared ?? "0") > limit) throw tooLarge();
  // A request's body holds to its declared length (Deno's server, and the tunnel, which cuts a
  // longer one off), so within the limit it is read whole, on Deno's fast path (which touching
  // `request.body` first would leave). Not a fetch's answer: fetch inflates a compressed body
  // past its declared length (a small "br" answer can become gigabytes).
  if (
    request instanceof Request && declared !== null && /^\d+$/.test(declared) &&
    !request.headers.has("content-encoding")
  ) {
    return await request.text();
  }
  if (request.body === null) return "";
  // Without a length it is counted as it arrives. A reader rather than for-await: its iterator
  // costs more than a small body's read.
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    size += read.value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(read.value);
  }
  const decoder = new TextDecoder();
  if (chunks.length === 1) return decoder.decode(chunks[0]);
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return decoder.decode(bytes);
}
