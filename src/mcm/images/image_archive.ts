/**
 * Reads an uploaded image archive as it streams in (spec/mcm.yaml, "Images"): a `docker save`
 * archive whose layer tar holds index.js, or a plain tar holding index.js, either optionally
 * gzipped. Every entry is checked before its bytes are used; only index.js is kept, in a
 * temporary file the caller commits or removes.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { createTarDecoder, type TarHeader } from "modern-tar";
import { DomainError, Invalid, TooLarge } from "../../errors/mod.ts";
import { concatBytes } from "../../tunnel/bytes.ts";

/** The limits of one archive. */
export interface ArchiveLimits {
  maxImageBytes: number;
  maxBundleBytes: number;
}

/** What an accepted archive holds. */
export interface ImageArchive {
  /** The manifest's first RepoTag, if there is a manifest. */
  repoTag: string | undefined;
  /** index.js, in a temporary file. */
  bundleFile: string;
  /** Hex SHA-256 of index.js. */
  bundleSha256: string;
  /** `sha256:<hex>` of the archive as uploaded. */
  digest: string;
  size: number;
}

/** Entries in an archive at most, layer entries included. */
export const MAX_ENTRIES = 256;
const MAX_METADATA_BYTES = 1024 * 1024;
const TAR_MAGIC_OFFSET = 257;

/** A refused archive (400), with what is wrong. */
function rejected(message: string): Invalid {
  return new Invalid(`image rejected: ${message}`);
}

/** State of one archive's reading. */
interface Reading {
  limits: ArchiveLimits;
  tempDir: string;
  entries: number;
  /** Bytes of all entries, nested ones included: bounds what gzip may expand to. */
  expanded: number;
  bundle?: { file: string; sha256: string; layer?: string };
  manifest?: unknown;
  layers: Set<string>;
}

/** An entry's path without `./`; 400 for a path or type that could escape or is not a file. */
function checkedName(header: TarHeader, reading: Reading): string | undefined {
  const type = header.type ?? "file";
  if (type === "pax-global-header") return undefined;
  if (type !== "file" && type !== "directory") {
    throw rejected(`entry '${header.name}' is a ${type}; only files and folders are allowed`);
  }
  if (++reading.entries > MAX_ENTRIES) {
    throw rejected(`more than ${MAX_ENTRIES} entries`);
  }
  reading.expanded += header.size;
  if (reading.expanded > 4 * reading.limits.maxImageBytes) {
    throw rejected("its entries unpack to more than 4 times mcm.maxImageBytes");
  }
  const name = header.name.replace(/^(\.\/)+/, "").replace(/\/$/, "");
  if (header.name.startsWith("/") || /^[A-Za-z]:/.test(name) || name.includes("\\")) {
    throw rejected(`entry '${header.name}' has an absolute path`);
  }
  if (name.split("/").some((segment) => segment === "..")) {
    throw rejected(`entry '${header.name}' has a '..' segment`);
  }
  return type === "directory" || name === "" || name === "." ? undefined : name;
}

/** The stream's first `n` bytes, and a stream of all its bytes again. */
async function peek(
  body: ReadableStream<Uint8Array>,
  n: number,
): Promise<{ head: Uint8Array; stream: ReadableStream<Uint8Array> }> {
  const reader = body.getReader();
  const seen: Uint8Array[] = [];
  let size = 0;
  while (size < n) {
    const { value, done } = await reader.read();
    if (done) break;
    seen.push(value);
    size += value.length;
  }
  const head = seen.length === 0 ? new Uint8Array(0) : concatBytes(seen);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      if (head.length > 0) controller.enqueue(head);
    },
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return { head, stream };
}

const isGzip = (head: Uint8Array) => head[0] === 0x1f && head[1] === 0x8b;
const isTar = (head: Uint8Array) =>
  head.length >= TAR_MAGIC_OFFSET + 5 &&
  new TextDecoder().decode(head.subarray(TAR_MAGIC_OFFSET, TAR_MAGIC_OFFSET + 5)) === "ustar";

/** The stream unzipped when it is gzip, as it is otherwise. */
async function unzipped(body: ReadableStream<Uint8Array>) {
  const { head, stream } = await peek(body, 2);
  return isGzip(head)
    ? stream.pipeThrough(new DecompressionStream("gzip") as TransformStream<Uint8Array, Uint8Array>)
    : stream;
}

async function readSmall(body: ReadableStream<Uint8Array>, name: string): Promise<string> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_METADATA_BYTES) throw rejected(`${name} is over 1 MiB`);
    parts.push(chunk);
  }
  return new TextDecoder().decode(await new Blob(parts as Uint8Array<ArrayBuffer>[]).bytes());
}

/** Writes index.js to a temporary file, hashing it. */
async function saveBundle(body: ReadableStream<Uint8Array>, reading: Reading, layer?: string) {
  if (reading.bundle) throw rejected("it holds more than one index.js");
  const file = `${reading.tempDir}/upload-${crypto.randomUUID()}.js`;
  const hash = createHash("sha256");
  // Recorded before writing, so that a failure below still removes the file.
  reading.bundle = { file, sha256: "", layer };
  const out = await Deno.open(file, { write: true, createNew: true, mode: 0o600 });
  try {
    for await (const chunk of body) {
      hash.update(chunk);
      for (let offset = 0; offset < chunk.length;) {
        offset += await out.write(chunk.subarray(offset));
      }
    }
    await out.sync();
  } finally {
    out.close();
  }
  reading.bundle.sha256 = hash.digest("hex");
}

/** Reads the entries of one tar stream; `layer` names the entry it is nested in. */
async function readEntries(
  tar: ReadableStream<Uint8Array>,
  reading: Reading,
  layer?: string,
): Promise<void> {
  for await (const entry of tar.pipeThrough(createTarDecoder({ strict: true }))) {
    const name = checkedName(entry.header, reading);
    if (name === undefined) {
      await entry.body.cancel();
    } else if (name === "index.js") {
      if (entry.header.size > reading.limits.maxBundleBytes) {
        throw rejected(`index.js is over ${reading.limits.maxBundleBytes} bytes`);
      }
      await saveBundle(entry.body, reading, layer);
    } else if (name === "manifest.json" && layer === undefined) {
      try {
        reading.manifest = JSON.parse(await readSmall(entry.body, name));
      } catch (error) {
        if (error instanceof DomainError) throw error;
        throw rejected("manifest.json is not JSON");
      }
    } else {
      const { head, stream } = await peek(entry.body, TAR_MAGIC_OFFSET + 5);
      const nestedTar = layer === undefined && (isTar(head) || isGzip(head));
      if (!nestedTar && entry.header.size > reading.limits.maxBundleBytes) {
        await stream.cancel();
        throw rejected(`entry '${name}' is over ${reading.limits.maxBundleBytes} bytes`);
      }
      if (nestedTar) {
        reading.layers.add(name);
        await readEntries(await unzipped(stream), reading, name);
      } else {
        for await (const _ of stream) { /* not needed: drained */ }
      }
    }
  }
}

/** The RepoTag of a docker manifest, after checking its layers are in the archive. */
function checkManifest(reading: Reading): string | undefined {
  if (reading.manifest === undefined) return undefined;
  const first = Array.isArray(reading.manifest) ? reading.manifest[0] : undefined;
  if (typeof first !== "object" || first === null) {
    throw rejected("manifest.json must be a list of images (docker save)");
  }
  const { Layers, RepoTags } = first as { Layers?: unknown; RepoTags?: unknown };
  const layers = Array.isArray(Layers) ? Layers.map(String) : [];
  for (const layer of layers) {
    if (!reading.layers.has(layer.replace(/^(\.\/)+/, ""))) {
      throw rejected(`manifest.json names layer '${layer}', which is not in the archive`);
    }
  }
  const from = reading.bundle?.layer;
  if (from !== undefined && !layers.some((layer) => layer.replace(/^(\.\/)+/, "") === from)) {
    throw rejected(`index.js is in '${from}', which manifest.json does not list as a layer`);
  }
  const tag = Array.isArray(RepoTags) ? RepoTags[0] : undefined;
  return typeof tag === "string" && /^[\x21-\x7e]{1,256}$/.test(tag) ? tag : undefined;
}

/** Reads and checks an archive; the caller must commit or remove `bundleFile`. */
export async function readImageArchive(
  chunks: AsyncIterable<Uint8Array>,
  tempDir: string,
  limits: ArchiveLimits,
): Promise<ImageArchive> {
  const hash = createHash("sha256");
  let size = 0;
  const counted = ReadableStream.from((async function* () {
    for await (const chunk of chunks) {
      size += chunk.length;
      if (size > limits.maxImageBytes) {
        throw new TooLarge(`the image is over ${limits.maxImageBytes} bytes (mcm.maxImageBytes)`);
      }
      hash.update(chunk);
      yield chunk;
    }
  })());
  const reading: Reading = { limits, tempDir, entries: 0, expanded: 0, layers: new Set() };
  try {
    try {
      await readEntries(await unzipped(counted), reading);
    } catch (error) {
      if (error instanceof DomainError) throw error;
      throw rejected(`it is not a readable tar archive (${(error as Error).message})`);
    }
    if (!reading.bundle) {
      throw rejected("it holds no index.js (at the top, or in a layer tar)");
    }
    const repoTag = checkManifest(reading);
    return {
      repoTag,
      bundleFile: reading.bundle.file,
      bundleSha256: reading.bundle.sha256,
      digest: `sha256:${hash.digest("hex")}`,
      size,
    };
  } catch (error) {
    if (reading.bundle) await Deno.remove(reading.bundle.file).catch(() => {});
    throw error;
  }
}
