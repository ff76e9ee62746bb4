/**
 * Downloads one file into a temporary file of the model's folder: checks the announced size
 * against the limit and the free disk space before writing, reports progress, and starts over
 * when the source cannot resume a broken transfer.
 *
 * A file may have several sources, tried in order (nodes of the mesh that hold it, then its
 * URL): when one fails (no byte for its stall time, a broken connection, an error status, another
 * size), the next goes on from the bytes already written (`Range`), so that the bytes of the
 * file come from one source or several in turn. The caller checks the whole file's hash.
 *
 * @module
 */
import { DomainError, UpstreamFailed, UpstreamTimeout } from "../errors/mod.ts";
import { openSource, RestartNeeded, type Source, type SourceOptions } from "./http_source.ts";
import { fileTooLarge, type ModelFiles, type WrittenFile } from "./model_files.ts";

/** Where bytes come from, as download progress says (spec/store.yaml DownloadSource). */
export type DownloadSource = "url" | { node: string };

/** One place the file can be fetched from. */
export interface FileSource {
  url: string;
  /** What progress says while bytes come from here. */
  label: DownloadSource;
  /** Headers for each request (a node's signed request). */
  headers?: () => Promise<Record<string, string>>;
  /** The size this source must announce (a node's advert); another size is a failure. */
  size?: number;
  /** Overrides of the transfer's stall time and retries (a node is left sooner than a URL). */
  stallMs?: number;
  retries?: number;
}

/** Where to put the file and how to report on it. */
export interface DownloadFileOptions extends SourceOptions {
  /** Largest file accepted. */
  maxBytes?: number;
  /** Bytes kept from the start of the file, for header checks. */
  headBytes: number;
  /** Called with every chunk; `totalSize` is undefined while the source has not said. */
  onProgress(size: number, totalSize: number | undefined, source: DownloadSource): void;
  /** Called when a source is left for the next one. */
  onSourceFailed?(source: FileSource, error: unknown): void;
}

/** A file fetched from several sources: what it is, and which sources sent bytes of it. */
export interface DownloadedFile extends WrittenFile {
  usedSources: FileSource[];
}

/** Whether a failure of a source is one the next source may make up for. */
function isSourceFailure(error: unknown): boolean {
  if (error instanceof UpstreamFailed || error instanceof UpstreamTimeout) return true;
  if (error instanceof RestartNeeded) return true;
  return !(error instanceof DomainError);
}

/** Fetches `url` into a checked temporary file beside `finalName` in the folder of `id`. */
export async function downloadFile(
  files: ModelFiles,
  id: string,
  finalName: string,
  url: string,
  options: DownloadFileOptions,
): Promise<WrittenFile> {
  return await downloadFromSources(files, id, finalName, [{ url, label: "url" }], options);
}

/**
 * Fetches the file from `sources` in turn (each going on where the last stopped) into a
 * temporary file; a source that cannot continue from a byte (the last one, a URL that ignores
 * Range) starts the file over from it alone.
 */
export async function downloadFromSources(
  files: ModelFiles,
  id: string,
  finalName: string,
  sources: FileSource[],
  options: DownloadFileOptions,
): Promise<DownloadedFile> {
  for (let restarts = 0;; restarts++) {
    const transfer = new Transfer(files, sources, options);
    let written: WrittenFile;
    try {
      written = await files.writeTemp(id, finalName, transfer.chunks(), {
        signal: options.signal,
        maxBytes: options.maxBytes,
        headBytes: options.headBytes,
      });
    } catch (error) {
      // Whatever stopped the write, the source's connection is closed now, not when collected.
      transfer.cancel();
      const last = transfer.current;
      if (error instanceof RestartNeeded && restarts < options.retries && last) {
        sources = [last];
        continue;
      }
      if (error instanceof RestartNeeded) {
        // Cut for silence or a rate below the minimum each time: the documented 504 naming it.
        if (error.cause instanceof UpstreamTimeout) throw error.cause;
        throw new UpstreamFailed(`${error.message} and the retries are used up: ${last?.url}`);
      }
      throw error;
    }
    const { totalSize } = transfer;
    if (totalSize !== undefined && written.size !== totalSize) {
      await files.discard(written);
      throw new UpstreamFailed(
        `the source sent ${written.size} bytes but announced ${totalSize}: ${transfer.current?.url}`,
      );
    }
    options.onProgress(written.size, written.size, transfer.current?.label ?? "url");
    return { ...written, usedSources: transfer.used };
  }
}

/** One pass over the sources into one temporary file. */
class Transfer {
  readonly #files: ModelFiles;
  readonly #sources: FileSource[];
  readonly #options: DownloadFileOptions;
  #opened: Source | undefined;
  /** The size the first source announced (every later one must agree). */
  totalSize: number | undefined;
  /** The source sending bytes now (or the last one). */
  current: FileSource | undefined;
  /** The sources that sent at least one byte. */
  readonly used: FileSource[] = [];

  constructor(files: ModelFiles, sources: FileSource[], options: DownloadFileOptions) {
    this.#files = files;
    this.#sources = sources;
    this.#options = options;
  }

  cancel(): void {
    this.#opened?.cancel();
  }

  /** The file's bytes, from one source after another. */
  async *chunks(): AsyncGenerator<Uint8Array> {
    const options = this.#options;
    let size = 0;
    for (const [index, source] of this.#sources.entries()) {
      const last = index === this.#sources.length - 1;
      this.current = source;
      try {
        const opened = this.#opened = await openSource(source.url, {
          signal: options.signal,
          stallMs: source.stallMs ?? options.stallMs,
          retries: source.retries ?? options.retries,
          headers: source.headers,
          from: size,
        });
        await this.#check(opened, source, size === 0);
        options.onProgress(size, this.totalSize, source.label);
        let counted = false;
        for await (const chunk of opened.chunks) {
          if (!counted) this.used.push(source);
          counted = true;
          size += chunk.byteLength;
          options.onProgress(size, this.totalSize, source.label);
          yield chunk;
        }
        return;
      } catch (error) {
        this.#opened?.cancel();
        options.signal.throwIfAborted();
        if (last || !isSourceFailure(error)) throw error;
        options.onSourceFailed?.(source, error);
      }
    }
  }

  /** The limit, the disk's space, and the size every source must agree on. */
  async #check(opened: Source, source: FileSource, first: boolean): Promise<void> {
    const announced = opened.totalSize;
    if (source.size !== undefined && announced !== source.size) {
      throw new UpstreamFailed(`the node announced ${announced} bytes, not ${source.size}`);
    }
    if (this.totalSize !== undefined && announced !== undefined && announced !== this.totalSize) {
      throw new UpstreamFailed(
        `${source.url} announced ${announced} bytes where an earlier source had ${this.totalSize}`,
      );
    }
    if (!first || announced === undefined) {
      this.totalSize ??= announced;
      return;
    }
    const { maxBytes } = this.#options;
    if (maxBytes !== undefined && announced > maxBytes) throw fileTooLarge(maxBytes);
    await this.#files.requireFreeSpace(announced);
    this.totalSize = announced;
  }
}
