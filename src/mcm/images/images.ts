/**
 * Image upload, listing and deletion (spec/mcm.yaml, "Images"). The archive is checked as it
 * streams in; its index.js is moved into place, then the record is committed.
 *
 * @module
 */
import type { Image } from "../../../gen/mcm/validators.ts";
import { Conflict, Invalid, NotFound, TooLarge } from "../../errors/mod.ts";
import type { UploadBody } from "../../streams/mod.ts";
import { KeyedLock } from "../../storage/keyed_lock.ts";
import type { BundleFiles } from "./bundle_files.ts";
import type { Caller } from "../caller.ts";
import { type ArchiveLimits, readImageArchive } from "./image_archive.ts";
import type { ImageRecord, McmRecords } from "../mcm_records.ts";

const NAME_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

/** A RepoTag without its tag (`example-v1:latest` is `example-v1`), `/` made `-`. */
function nameOfRepoTag(tag: string): string {
  const slash = tag.lastIndexOf("/");
  const colon = tag.lastIndexOf(":");
  return (colon > slash ? tag.slice(0, colon) : tag).replaceAll("/", "-");
}

/** A file name without `.tar`/`.tgz` and a trailing version (`hello-v1-1.0.0.tar`). */
function nameOfFile(filename: string): string {
  return filename.split(/[\\/]/).pop()!
    .replace(/(\.tar\.gz|\.tgz|\.tar)$/i, "")
    .replace(/-\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$/, "");
}

/** The image's name: the name field, else the RepoTag, else the file name. */
export function imageName(
  field: string | undefined,
  repoTag: string | undefined,
  filename: string | undefined,
): string {
  const name = field ?? (repoTag ? nameOfRepoTag(repoTag) : undefined) ??
    (filename ? nameOfFile(filename) : undefined);
  if (!name) {
    throw new Invalid(
      "the image has no name: send a 'name' field (or ?name=), a manifest with a RepoTag, or a file name",
    );
  }
  if (!NAME_PATTERN.test(name)) {
    throw new Invalid(
      `image name '${name}' must be 1 to 128 letters, digits, '.', '_' or '-'; send a 'name' field`,
    );
  }
  return name;
}

/** The images of the node. */
export class Images {
  readonly #records: McmRecords;
  readonly #files: BundleFiles;
  readonly #limits: ArchiveLimits;
  /** Bundle files are shared by content: committing one and dropping one never interleave. */
  readonly #lock = new KeyedLock();

  constructor(records: McmRecords, files: BundleFiles, limits: ArchiveLimits) {
    this.#records = records;
    this.#files = files;
    this.#limits = limits;
  }

  /** The API view of a record. */
  view(record: ImageRecord, usage = this.#records.usage()): Image {
    const { id, name, digest, size, created, repoTags } = record;
    return { id, name, digest, size, created, repoTags, containers: usage.get(id) ?? 0 };
  }

  /** An image the caller may use, by id or (of its own client) by name; 404 otherwise. */
  find(caller: Caller, idOrName: string): ImageRecord {
    const record = this.#records.image(`${caller.client}-${idOrName}`) ??
      this.#records.image(idOrName);
    if (!record || (!caller.admin && record.client !== caller.client)) {
      throw new NotFound(
        `no image '${idOrName}' for client '${caller.client}'; upload it first (POST /mcm/v1/images)`,
      );
    }
    return record;
  }

  /** Reads, checks and stores an uploaded image. */
  async upload(caller: Caller, body: UploadBody, queryName: string | undefined): Promise<Image> {
    if (body.declaredSize !== undefined && body.declaredSize > this.#limits.maxImageBytes) {
      throw new TooLarge(
        `the image is over ${this.#limits.maxImageBytes} bytes (mcm.maxImageBytes)`,
      );
    }
    const archive = await readImageArchive(body.chunks, this.#files.tempDir, this.#limits);
    try {
      await body.complete;
      const field = body.fields.get("name") ?? queryName;
      const name = imageName(field, archive.repoTag, body.filename);
      const record: ImageRecord = {
        id: `${caller.client}-${name}`,
        client: caller.client,
        name,
        digest: archive.digest,
        size: archive.size,
        created: Math.floor(Date.now() / 1000),
        bundle: archive.bundleSha256,
        repoTags: archive.repoTag ? [archive.repoTag] : [`${name}:latest`],
      };
      return await this.#lock.exclusive("bundles", async () => {
        await this.#files.commit(archive.bundleFile, archive.bundleSha256);
        const before = this.#records.putImage(record);
        if (before && before !== record.bundle) await this.#drop(before);
        return this.view(record);
      });
    } finally {
      await Deno.remove(archive.bundleFile).catch(() => {});
    }
  }

  /** The caller's images (every client's for a key holder), oldest first. */
  list(caller: Caller): Image[] {
    const usage = this.#records.usage();
    return this.#records.images(caller.admin ? undefined : caller.client).map((record) =>
      this.view(record, usage)
    );
  }

  /** Deletes an image no container uses; 409 otherwise. */
  async delete(caller: Caller, id: string): Promise<Image> {
    const record = this.find(caller, id);
    const users = this.#records.containers().filter((c) => c.imageId === record.id);
    if (users.length > 0) {
      throw new Conflict(
        `image '${record.id}' is used by ${
          users.map((c) => c.id).join(", ")
        }; delete those containers first`,
      );
    }
    this.#records.deleteImage(record.id);
    await this.dropBundle(record.bundle);
    return this.view(record);
  }

  /** Removes a bundle file once no image or container needs it. */
  dropBundle(bundle: string): Promise<void> {
    return this.#lock.exclusive("bundles", () => this.#drop(bundle));
  }

  async #drop(bundle: string): Promise<void> {
    if (!this.#records.bundleInUse(bundle)) await this.#files.removeBundle(bundle);
  }
}
