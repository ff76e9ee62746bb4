/**
 * The files of a container's storage (`context.storage.saveFile`, `deleteFile`,
 * `context.http.request({ outputFile })`, `res.writeMimeFile`, form uploads), kept by the
 * container process's main thread in `<storage>/files/`. A name is a `/`-separated relative path
 * (`cache/tiny.gguf`), checked by ../storage_names.ts; its folders are made on demand and stay
 * when their last file is deleted. One quota, `mcm.storageMb`, covers these files, their folders
 * (a block each) and the key-value store together. A file is written to a temporary name,
 * synced, then renamed: a crash leaves the old file or the new one, never half of one.
 *
 * @module
 */
import {
  resolveStorageFile,
  StorageNameError,
  TEMP_FILE_PREFIX as TEMP_PREFIX,
} from "../storage_names.ts";

/** What a folder costs of the quota: one block, so that empty folders cannot flood the disk. */
const FOLDER_BYTES = 4096;

/** A refusal the microservice sees as the error's message. */
export { StorageNameError as StorageFileError };

/** The files of one container. */
export class StorageFiles {
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #otherBytes: () => number;
  #used = 0;
  #nextTemp = 0;

  /**
   * Opens `<storageDir>/files`; `otherBytes` tells what the key-value store takes of the
   * `maxBytes` they share.
   */
  constructor(storageDir: string, maxBytes: number, otherBytes: () => number) {
    this.#dir = `${storageDir}/files`;
    this.#maxBytes = maxBytes;
    this.#otherBytes = otherBytes;
    Deno.mkdirSync(this.#dir, { recursive: true });
    // Temporary files live right in the folder: left there by a crash in the middle of a write.
    for (const entry of Deno.readDirSync(this.#dir)) {
      if (entry.name.startsWith(TEMP_PREFIX)) Deno.removeSync(`${this.#dir}/${entry.name}`);
    }
    this.#used = usedBytes(this.#dir);
  }

  /** The path of a file, after checking its name and the folders on its way (no links). */
  path(name: string): string {
    return resolveStorageFile(this.#dir, name).path;
  }

  #free(): number {
    return this.#maxBytes - this.#otherBytes() - this.#used;
  }

  #sizeOf(path: string): number {
    try {
      return Deno.statSync(path).size;
    } catch {
      return 0;
    }
  }

  #full(): StorageNameError {
    return new StorageNameError(
      `the container's storage is full (${this.#maxBytes} bytes, mcm.storageMb in the node's config)`,
    );
  }

  /** Writes a whole file. */
  async save(name: string, bytes: Uint8Array): Promise<void> {
    await this.write(name, ReadableStream.from([bytes]));
  }

  /**
   * Streams `body` into the file `name`, within the quota (the file it replaces counts as
   * freed); `onChunk` hears every chunk. The body is never held whole; on any failure nothing
   * of it is kept.
   */
  async write(
    name: string,
    body: ReadableStream<Uint8Array>,
    onChunk: () => void = () => {},
  ): Promise<number> {
    let path: string;
    try {
      path = await this.#folderFor(name);
    } catch (error) {
      await body.cancel().catch(() => {});
      throw error;
    }
    const temp = `${this.#dir}/${TEMP_PREFIX}${this.#nextTemp++}`;
    const budget = this.#free() + this.#sizeOf(path);
    let written = 0;
    const file = await Deno.open(temp, { write: true, createNew: true });
    try {
      for await (const chunk of body) {
        onChunk();
        written += chunk.length;
        if (written > budget) throw this.#full();
        for (let done = 0; done < chunk.length;) done += await file.write(chunk.subarray(done));
      }
      await file.syncData();
    } catch (error) {
      file.close();
      await Deno.remove(temp).catch(() => {});
      await body.cancel().catch(() => {});
      throw error;
    }
    file.close();
    try {
      // Checked again after the download: no folder on the way was swapped for a link meanwhile.
      this.path(name);
    } catch (error) {
      await Deno.remove(temp).catch(() => {});
      throw error;
    }
    const replaced = this.#sizeOf(path);
    await Deno.rename(temp, path);
    this.#used += written - replaced;
    return written;
  }

  /** Makes the folders of `name` that are missing, within the quota; its checked path. */
  async #folderFor(name: string): Promise<string> {
    const { path, missingFolders } = resolveStorageFile(this.#dir, name);
    if (missingFolders.length === 0 && (await Deno.lstat(path).catch(() => null))?.isDirectory) {
      throw new StorageNameError(`${JSON.stringify(name)} is a folder, not a file`);
    }
    if (missingFolders.length * FOLDER_BYTES > this.#free()) throw this.#full();
    for (const folder of missingFolders) {
      try {
        await Deno.mkdir(folder);
        this.#used += FOLDER_BYTES;
      } catch (error) {
        // Made by a write beside this one, which counted it.
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      }
    }
    // Made now: checked again, so that nothing planted meanwhile is followed.
    return missingFolders.length > 0 ? this.path(name) : path;
  }

  /**
   * Deletes a file (its folders stay, empty or not), or an empty folder; nothing when there is
   * none.
   */
  async delete(name: string): Promise<void> {
    const path = this.path(name);
    let info: Deno.FileInfo;
    try {
      info = await Deno.lstat(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    try {
      await Deno.remove(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      if (info.isDirectory) {
        throw new StorageNameError(`${JSON.stringify(name)} is a folder that is not empty`);
      }
      throw error;
    }
    this.#used -= info.isDirectory ? FOLDER_BYTES : info.size;
  }

  /** Opens a file for reading; undefined when there is none. */
  async open(
    name: string,
  ): Promise<{ size: number; body: ReadableStream<Uint8Array> } | undefined> {
    const path = this.path(name);
    try {
      const file = await Deno.open(path, { read: true });
      const { size, isFile } = await file.stat();
      if (!isFile) {
        file.close();
        return undefined;
      }
      return { size, body: file.readable };
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    }
  }
}

/** The bytes under `dir`: its files' sizes and a block per folder (links are not followed). */
function usedBytes(dir: string): number {
  let used = 0;
  for (const entry of Deno.readDirSync(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isFile) used += Deno.statSync(path).size;
    else if (entry.isDirectory) used += FOLDER_BYTES + usedBytes(path);
  }
  return used;
}
