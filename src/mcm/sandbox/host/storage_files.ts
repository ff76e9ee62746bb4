/**
 * The files of a container's storage (`context.storage.saveFile`, `deleteFile`,
 * `context.http.request({ outputFile })`, `res.writeMimeFile`), kept by the container process's
 * main thread in `<storage>/files/`. One quota, `mcm.storageMb`, covers these files and the
 * key-value store together. A file is written to a temporary name, synced, then renamed: a
 * crash leaves the old file or the new one, never half of one.
 *
 * @module
 */

/** A file name: one path segment of at most 255 characters, not `.` or `..`. */
const NAME_PATTERN = /^[A-Za-z0-9_.-][A-Za-z0-9_. +=@-]{0,254}$/;
const TEMP_PREFIX = ".partial-";

/** A refusal the microservice sees as the error's message. */
export class StorageFileError extends Error {}

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
    for (const entry of Deno.readDirSync(this.#dir)) {
      const path = `${this.#dir}/${entry.name}`;
      // Left by a crash in the middle of a write.
      if (entry.name.startsWith(TEMP_PREFIX)) Deno.removeSync(path);
      else if (entry.isFile) this.#used += Deno.statSync(path).size;
    }
  }

  /** The path of a file, after checking its name. */
  path(name: string): string {
    if (!NAME_PATTERN.test(name) || name === "." || name === "..") {
      throw new StorageFileError(
        `'${name}' is not a file name: use 1 to 255 letters, digits and . _ - + = @ (no '/')`,
      );
    }
    return `${this.#dir}/${name}`;
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

  #full(): StorageFileError {
    return new StorageFileError(
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
    const path = this.path(name);
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
    const replaced = this.#sizeOf(path);
    await Deno.rename(temp, path);
    this.#used += written - replaced;
    return written;
  }

  /** Deletes a file; nothing when there is none. */
  async delete(name: string): Promise<void> {
    const path = this.path(name);
    const size = this.#sizeOf(path);
    try {
      await Deno.remove(path);
      this.#used -= size;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
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
