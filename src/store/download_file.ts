/**
 * Downloads one file into a temporary file of the model's folder: checks the announced size
 * against the limit and the free disk space before writing, reports progress, and starts over
 * when the source cannot resume a broken transfer.
 *
 * @module
 */
import { UpstreamFailed } from "../errors/mod.ts";
import { openSource, RestartNeeded, type SourceOptions } from "./http_source.ts";
import { fileTooLarge, type ModelFiles, type WrittenFile } from "./model_files.ts";

/** Where to put the file and how to report on it. */
export interface DownloadFileOptions extends SourceOptions {
  /** Largest file accepted. */
  maxBytes?: number;
  /** Bytes kept from the start of the file, for header checks. */
  headBytes: number;
  /** Called with every chunk; `totalSize` is undefined while the source has not said. */
  onProgress(size: number, totalSize: number | undefined): void;
}

/** Fetches `url` into a checked temporary file beside `finalName` in the folder of `id`. */
export async function downloadFile(
  files: ModelFiles,
  id: string,
  finalName: string,
  url: string,
  options: DownloadFileOptions,
): Promise<WrittenFile> {
  for (let restarts = 0;; restarts++) {
    const source = await openSource(url, options);
    const { totalSize } = source;
    try {
      if (totalSize !== undefined) {
        if (options.maxBytes !== undefined && totalSize > options.maxBytes) {
          throw fileTooLarge(options.maxBytes);
        }
        await files.requireFreeSpace(totalSize);
      }
    } catch (error) {
      source.cancel();
      throw error;
    }
    options.onProgress(0, totalSize);
    let size = 0;
    const counted = async function* () {
      for await (const chunk of source.chunks) {
        size += chunk.byteLength;
        options.onProgress(size, totalSize);
        yield chunk;
      }
    };
    let written: WrittenFile;
    try {
      written = await files.writeTemp(id, finalName, counted(), {
        signal: options.signal,
        maxBytes: options.maxBytes,
        headBytes: options.headBytes,
      });
    } catch (error) {
      // Whatever stopped the write, the source's connection is closed now, not when collected.
      source.cancel();
      if (error instanceof RestartNeeded && restarts < options.retries) continue;
      if (error instanceof RestartNeeded) {
        throw new UpstreamFailed(`${error.message} and the retries are used up: ${url}`);
      }
      throw error;
    }
    if (totalSize !== undefined && written.size !== totalSize) {
      await files.discard(written);
      throw new UpstreamFailed(
        `the source sent ${written.size} bytes but announced ${totalSize}: ${url}`,
      );
    }
    options.onProgress(written.size, written.size);
    return written;
  }
}
