/**
 * Whether a GGUF file is an embedding model, read from the first bytes of its header as a
 * pull sees them before the node downloads it (one Range request): its `general.architecture`
 * is an encoder's (BERT and kin), or it declares `{arch}.pooling_type`, which llama.cpp reads
 * only for embeddings. The node reads the whole header itself (src/store/gguf_metadata.ts); this
 * is the part the CLI needs to give a new record its kind.
 *
 * @module
 */

/** Architectures that only embed (llama.cpp's names). */
const ENCODERS = new Set([
  "bert",
  "nomic-bert",
  "nomic-bert-moe",
  "jina-bert-v2",
  "jina-bert-v3",
  "neo-bert",
  "modern-bert",
  "t5encoder",
]);

/** Byte sizes of GGUF's fixed-size value types, by type number. */
const FIXED: Record<number, number> = {
  0: 1,
  1: 1,
  2: 2,
  3: 2,
  4: 4,
  5: 4,
  6: 4,
  7: 1,
  10: 8,
  11: 8,
  12: 8,
};
const UINT32 = 4;
const INT32 = 5;
const STRING = 8;
const ARRAY = 9;

/** What the header's first key/values say; undefined for a header that is not GGUF. */
export interface GgufHead {
  architecture?: string;
  /** `{arch}.pooling_type` is declared as mean, cls or last (1..3). */
  pooling: boolean;
}

/**
 * Reads the key/values in `bytes` (a prefix of the file) as far as they go: a header cut off by
 * the prefix's end gives what came before.
 */
export function readGgufHead(bytes: Uint8Array): GgufHead | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 24 || view.getUint32(0, true) !== 0x46554747) return undefined;
  const keys = Number(view.getBigUint64(16, true));
  const decoder = new TextDecoder();
  let at = 24;
  const need = (n: number) => {
    if (at + n > bytes.byteLength) throw new RangeError("cut off");
  };
  const string = () => {
    need(8);
    const length = Number(view.getBigUint64(at, true));
    need(8 + length);
    const text = decoder.decode(bytes.subarray(at + 8, at + 8 + length));
    at += 8 + length;
    return text;
  };
  const skip = (type: number): void => {
    if (type === STRING) return void string();
    if (type === ARRAY) {
      need(12);
      const items = view.getUint32(at, true);
      const count = Number(view.getBigUint64(at + 4, true));
      at += 12;
      if (FIXED[items] !== undefined) {
        return need(count * FIXED[items]), void (at += count * FIXED[items]);
      }
      for (let i = 0; i < count; i++) skip(items);
      return;
    }
    if (FIXED[type] === undefined) throw new RangeError(`type ${type}`);
    need(FIXED[type]);
    at += FIXED[type];
  };
  const head: GgufHead = { pooling: false };
  try {
    for (let i = 0; i < keys; i++) {
      const key = string();
      need(4);
      const type = view.getUint32(at, true);
      at += 4;
      if (key === "general.architecture" && type === STRING) head.architecture = string();
      else if (key.endsWith(".pooling_type") && (type === UINT32 || type === INT32)) {
        need(4);
        // 0 is none and -1 unspecified (llama.cpp): only mean, cls and last pool embeddings.
        const pooling = type === UINT32 ? view.getUint32(at, true) : view.getInt32(at, true);
        if (pooling >= 1 && pooling <= 3) head.pooling = true;
        at += 4;
      } else skip(type);
    }
  } catch { /* The prefix ends inside the header: what was read stands. */ }
  return head;
}

/** Whether the header says the model embeds (an encoder's architecture, or pooling declared). */
export function embedsByHead(head: GgufHead | undefined): boolean {
  if (!head) return false;
  return (head.architecture !== undefined && ENCODERS.has(head.architecture)) || head.pooling;
}

/** How much of a file its head is read from: the general.* keys come before the vocabulary. */
export const HEAD_BYTES = 256 * 1024;

/** How long a source or the Hub may take to answer the CLI before it gives up on it. */
export const SOURCE_TIMEOUT_MS = 15_000;

/**
 * The first bytes of `body`, at most `limit` (a server that sends more, as one that ignores a
 * Range header does, is cut off there); `more` says whether it had more.
 */
export async function readUpTo(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<{ bytes: Uint8Array; more: boolean }> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let more = false;
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    if (size + value.byteLength > limit) {
      chunks.push(value.subarray(0, limit - size));
      size = limit;
      more = true;
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel();
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) bytes.set(chunk, (offset += chunk.byteLength) - chunk.byteLength);
  return { bytes, more };
}

/**
 * The head of the GGUF file at `url` (one Range request): undefined when it is not GGUF, and
 * `unread` (undefined unless given) when the source did not answer with it; the node's own
 * download then says what is wrong with the source.
 */
export async function fetchGgufHead<Unread = undefined>(
  url: string,
  fetcher: typeof fetch = fetch,
  unread?: Unread,
): Promise<GgufHead | undefined | Unread> {
  try {
    const response = await fetcher(url, {
      headers: { Range: `bytes=0-${HEAD_BYTES - 1}` },
      signal: AbortSignal.timeout(SOURCE_TIMEOUT_MS),
    });
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return unread;
    }
    return readGgufHead((await readUpTo(response.body, HEAD_BYTES)).bytes);
  } catch {
    return unread;
  }
}
