/**
 * The files of microservice deployment under `<dataDir>/mcm/`: bundles by content
 * (`bundles/<sha256>.js`), uploads in progress (`tmp/`, emptied at every start) and each
 * container's storage folder (`storage/<hash of the container id>/`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";

/** The folders of deployment. */
export class BundleFiles {
  readonly #root: string;

  private constructor(root: string) {
    this.#root = root;
  }

  /** Creates the folders; leftovers of uploads cut off by a crash are removed. */
  static async open(dataDir: string): Promise<BundleFiles> {
    const root = join(dataDir, "mcm");
    await Deno.remove(join(root, "tmp"), { recursive: true }).catch(() => {});
    for (const dir of ["bundles", "tmp", "storage"]) {
      await Deno.mkdir(join(root, dir), { recursive: true, mode: 0o700 });
    }
    return new BundleFiles(root);
  }

  /** Where uploads are written before they are checked. */
  get tempDir(): string {
    return join(this.#root, "tmp");
  }

  /** The file of a bundle. */
  bundlePath(sha256: string): string {
    return join(this.#root, "bundles", `${sha256}.js`);
  }

  /** Moves a checked upload into place (a bundle with the same content may be there already). */
  async commit(tempFile: string, sha256: string): Promise<void> {
    await Deno.rename(tempFile, this.bundlePath(sha256));
  }

  /** Removes a bundle nothing uses any more. */
  async removeBundle(sha256: string): Promise<void> {
    await Deno.remove(this.bundlePath(sha256)).catch(() => {});
  }

  /** Creates the storage folder of a container when missing. */
  async storageDir(containerId: string): Promise<string> {
    const dir = this.storagePath(containerId);
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  /** Deletes a container's storage. */
  async removeStorage(containerId: string): Promise<void> {
    await Deno.remove(this.storagePath(containerId), { recursive: true }).catch(() => {});
  }

  /** The storage folder of a container. */
  storagePath(containerId: string): string {
    // Container ids carry client ids of any characters; the folder name must not.
    const name = createHash("sha256").update(containerId).digest("hex").slice(0, 32);
    return join(this.#root, "storage", name);
  }
}
