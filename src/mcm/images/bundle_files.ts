/**
 * The files of microservice deployment under `<dataDir>/mcm/`: bundles by content
 * (`bundles/<sha256>.js`), uploads in progress (`tmp/`, emptied at every start), each
 * container's storage folder (`storage/<hash of the container id>/`), and the container
 * process's own code (`runtime/<hash>/`, written from bundles/sandbox_sources.ts).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { HOST_SOURCE, WORKER_SOURCE } from "../../../bundles/sandbox_sources.ts";
import { writeVersioned } from "../../storage/versioned_files.ts";

/** Writes the container process's modules (see writeVersioned). */
function writeRuntime(dir: string): Promise<string> {
  return writeVersioned(dir, {
    "container_host.js": HOST_SOURCE,
    "sandbox_worker.js": WORKER_SOURCE,
  });
}

/** The folders of deployment. */
export class BundleFiles {
  readonly #root: string;
  /** Where container_host.js and sandbox_worker.js are. */
  readonly runtimeDir: string;

  private constructor(root: string, runtimeDir: string) {
    this.#root = root;
    this.runtimeDir = runtimeDir;
  }

  /** Creates the folders; leftovers of uploads cut off by a crash are removed. */
  static async open(dataDir: string): Promise<BundleFiles> {
    const root = join(dataDir, "mcm");
    // Uploads cut off, and the sockets of client processes gone with the last run.
    for (const dir of ["tmp", "channels"]) {
      await Deno.remove(join(root, dir), { recursive: true }).catch(() => {});
    }
    for (const dir of ["bundles", "tmp", "storage", "channels"]) {
      await Deno.mkdir(join(root, dir), { recursive: true, mode: 0o700 });
    }
    return new BundleFiles(root, await writeRuntime(join(root, "runtime")));
  }

  /** The folder of every bundle. */
  get bundlesDir(): string {
    return join(this.#root, "bundles");
  }

  /** The folder of every container's storage folder. */
  get storageRoot(): string {
    return join(this.#root, "storage");
  }

  /**
   * Where the node listens for the workers of client processes (runtime/channel_socket.ts):
   * one unix socket per process.
   */
  get channelsDir(): string {
    return join(this.#root, "channels");
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
