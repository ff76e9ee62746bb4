/**
 * Provisioning model files: by upload and by download. Each writes temporary files, checks
 * them, and puts them in place together under the model's lock; only then is the record
 * changed. On any failure the old files and record stay as they were.
 *
 * @module
 */
import type { DownloadModelRequest, Kind, Model } from "../../gen/store/validators.ts";
import { Conflict, DomainError, Invalid, Unavailable } from "../errors/mod.ts";
import type { UploadBody } from "../streams/mod.ts";
import { downloadFromSources, type DownloadSource, type FileSource } from "./download_file.ts";
import { checkDownloadRequest, verifyWritten, type WrittenFiles } from "./file_checks.ts";
import { describeModelFile, type ModelFileFacts } from "./gguf_metadata.ts";
import { formatOf, GGUF_HEADER_BYTES } from "./model_format.ts";
import { type FileRole, fileTooLarge, type ModelFiles, storedFileName } from "./model_files.ts";
import { type CommittedFiles, type ModelRecords, toModel } from "./model_records.ts";
import type { Transfers } from "./transfers.ts";

/** Settings of provisioning. */
export interface ProvisioningOptions {
  /** Largest model file accepted, in bytes; unlimited when absent. */
  maxFileBytes?: number;
  /** A download that receives nothing for this long is retried. Default 30 s. */
  stallMs?: number;
  /** Retries of a broken download. Default 5. */
  retries?: number;
  /** Hosts (`name` or `name:port`) downloads may come from; any when absent. */
  downloadHosts?: string[];
}

/**
 * Progress of one file of a download; `source` is given on a download that looked for the file
 * on the mesh (spec/store.yaml DownloadSource).
 */
export type ProgressListener = (
  role: FileRole,
  size: number,
  totalSize?: number,
  source?: DownloadSource,
) => void;

/** Nodes of the mesh that hold a file (mesh_sources.ts). */
export interface MeshFiles {
  /**
   * Sources on the mesh for the model file with this sha256 and the size, best first; [] when
   * no node holds it, undefined when the mesh is off (nothing was looked for).
   */
  find(sha256: string, signal: AbortSignal): Promise<FileSource[] | undefined>;
}

const deletedDuring = (id: string, transfer: "upload" | "download") =>
  new Conflict(`model '${id}' was deleted while its file was being ${transfer}ed`);

/** Uploads and downloads of model files. */
/** How long a node that sent a file's wrong bytes is not asked for that file. */
const LIAR_MS = 10 * 60_000;

export class Provisioning {
  readonly #records: ModelRecords;
  readonly #files: ModelFiles;
  readonly #transfers: Transfers;
  readonly #options: ProvisioningOptions;
  #mesh: MeshFiles | undefined;
  /** `<node>/<sha256>` of nodes that sent a file's wrong bytes, until when (ms). */
  readonly #liars = new Map<string, number>();

  /** Whether `source` (a node) sent wrong bytes of `sha256` lately. */
  #lied(source: FileSource, sha256: string): boolean {
    if (source.label === "url") return false;
    const key = `${source.label.node}/${sha256}`;
    const until = this.#liars.get(key);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.#liars.delete(key);
    return false;
  }

  /** Leaves `source` out of `sha256`'s downloads for LIAR_MS. */
  #remember(source: FileSource, sha256: string): void {
    if (source.label === "url") return;
    // Bounded: a flood of liars forgets the oldest.
    if (this.#liars.size >= 1024) this.#liars.delete(this.#liars.keys().next().value!);
    this.#liars.set(`${source.label.node}/${sha256}`, Date.now() + LIAR_MS);
  }

  /** Provisioning into these records and files; `transfers` is shared with the registry. */
  constructor(
    records: ModelRecords,
    files: ModelFiles,
    transfers: Transfers,
    options: ProvisioningOptions = {},
  ) {
    this.#records = records;
    this.#files = files;
    this.#transfers = transfers;
    this.#options = options;
  }

  /**
   * Provisions the model file (or a vlm's projector) from an upload. The file is written to a
   * temporary name, checked, and renamed into place; only then is the record updated. On any
   * failure the old file and record stay as they were.
   */
  async upload(
    id: string,
    body: UploadBody,
    options: { sha256?: string; file?: FileRole } = {},
  ): Promise<Model> {
    const record = this.#records.require(id);
    const role = options.file ?? "model";
    if (role === "mmproj" && record.kind !== "vlm") {
      throw new Invalid(`only a vlm has a projector file; model '${id}' is ${record.kind}`);
    }
    const { maxFileBytes } = this.#options;
    if (
      body.declaredSize !== undefined && maxFileBytes !== undefined &&
      body.declaredSize > maxFileBytes
    ) {
      throw fileTooLarge(maxFileBytes);
    }
    // The whole body bounds the file (multipart adds a few hundred bytes of headers).
    if (body.bodyLength !== undefined) await this.#files.requireFreeSpace(body.bodyLength);
    const controller = this.#transfers.begin(id);
    let written;
    try {
      written = await this.#files.writeTemp(id, storedFileName(record, role), body.chunks, {
        signal: controller.signal,
        maxBytes: maxFileBytes,
        headBytes: GGUF_HEADER_BYTES,
      });
      await body.complete.catch(async (error) => {
        await this.#files.discard(written!);
        throw error;
      });
    } catch (error) {
      if (controller.signal.aborted) throw deletedDuring(id, "upload");
      throw error;
    } finally {
      this.#transfers.end(id, controller);
    }
    if (body.declaredSize !== undefined && written.size !== body.declaredSize) {
      await this.#files.discard(written);
      throw new Invalid(
        `the body has ${written.size} bytes but Content-Length said ${body.declaredSize}`,
      );
    }
    return await this.#commit(id, { [role]: written }, { [role]: options.sha256 }, "upload");
  }

  /** Lets downloads given a sha256 fetch the file from nodes of the mesh that hold it. */
  useMesh(mesh: MeshFiles): void {
    this.#mesh = mesh;
  }

  /** Checks a download request before any byte moves; returns the model as it is now. */
  checkDownload(id: string, request: DownloadModelRequest): Model {
    const record = this.#records.require(id);
    checkDownloadRequest(record, request, this.#options.downloadHosts);
    return toModel(record);
  }

  /**
   * Downloads the files of a model (a vlm's projector first), then checks them and puts them in
   * place together. `signal` cancels it; deleting the model cancels it too.
   */
  async download(
    id: string,
    request: DownloadModelRequest,
    signal: AbortSignal,
    onProgress: ProgressListener,
  ): Promise<Model> {
    const record = this.#records.require(id);
    const controller = this.#transfers.begin(id);
    const written: WrittenFiles = {};
    const transfer = AbortSignal.any([signal, controller.signal]);
    const fetchFile = async (role: FileRole, url: string, sha256?: string) => {
      const wanted = sha256?.toLowerCase();
      const peers = wanted && this.#mesh
        ? (await this.#mesh.find(wanted, transfer))?.filter((p) => !this.#lied(p, wanted))
        : undefined;
      const fetchFrom = (sources: FileSource[]) =>
        downloadFromSources(this.#files, id, storedFileName(record, role), sources, {
          signal: transfer,
          stallMs: this.#options.stallMs ?? 30_000,
          retries: this.#options.retries ?? 5,
          maxBytes: this.#options.maxFileBytes,
          headBytes: GGUF_HEADER_BYTES,
          onProgress: (size, totalSize, source) =>
            onProgress(role, size, totalSize, peers ? source : undefined),
          onSourceFailed: (source, error) =>
            console.warn(`download of '${id}': ${describe(source)} failed, going on: ${error}`),
        });
      const fromUrl: FileSource = { url, label: "url" };
      let untried = peers ?? [];
      let file = await fetchFrom([...untried, fromUrl]);
      for (;;) {
        const fromNodes = file.usedSources.filter((source) => source.label !== "url");
        if (!wanted || fromNodes.length === 0 || file.sha256 === wanted) break;
        // The nodes that sent wrong bytes are not asked for this file again for a while (which
        // of them lied is unknown when several sent parts); the others, then the URL, go on.
        await this.#files.discard(file);
        for (const source of fromNodes) this.#remember(source, wanted);
        untried = untried.filter((source) => !fromNodes.includes(source));
        console.warn(
          `download of '${id}': the bytes from ${fromNodes.map(describe).join(", ")} do not ` +
            `hash to ${sha256}; downloading it again from ${
              untried.length ? "the other nodes, then " : ""
            }${url}`,
        );
        file = await fetchFrom([...untried, fromUrl]);
      }
      written[role] = file;
    };
    try {
      if (request.mmprojUrl) await fetchFile("mmproj", request.mmprojUrl);
      await fetchFile("model", request.url, request.sha256);
    } catch (error) {
      for (const file of Object.values(written)) await this.#files.discard(file);
      if (controller.signal.aborted) {
        const reason = controller.signal.reason;
        throw reason instanceof DomainError ? reason : deletedDuring(id, "download");
      }
      throw error;
    } finally {
      this.#transfers.end(id, controller);
    }
    const expected = { model: request.sha256, mmproj: request.mmprojSha256 };
    return await this.#commit(id, written, expected, "download");
  }

  /**
   * Checks temporary files (hash, header) and renames them into place, then records them, under
   * the model's lock. The temporary files are gone afterwards, whatever happened.
   */
  async #commit(
    id: string,
    written: WrittenFiles,
    expectedSha256: Partial<Record<FileRole, string>>,
    transfer: "upload" | "download",
  ): Promise<Model> {
    try {
      const { kind } = this.#records.require(id);
      verifyWritten(kind, written, expectedSha256, transfer);
      // The header walk is the GGUF check (400 when it fails), made before anything is put in
      // place and outside the model's lock: a large vocabulary takes a moment to skip.
      const described = await describeWritten(kind, written);
      return await this.#transfers.exclusive(
        id,
        () => this.#putInPlace(id, kind, written, described, transfer),
      );
    } finally {
      for (const file of Object.values(written)) await this.#files.discard(file);
    }
  }

  async #putInPlace(
    id: string,
    kind: Kind,
    written: WrittenFiles,
    described: ModelFileFacts,
    transfer: "upload" | "download",
  ) {
    const current = this.#records.get(id);
    if (!current) throw deletedDuring(id, transfer);
    if (formatOf(current.kind) !== formatOf(kind)) {
      throw new Conflict(
        `model '${id}' changed to kind ${current.kind} while its file was being ${transfer}ed`,
      );
    }
    const { model, mmproj } = written;
    const facts: CommittedFiles = {};
    if (mmproj) facts.mmproj = { size: mmproj.size, sha256: mmproj.sha256 };
    if (model) facts.model = { size: model.size, sha256: model.sha256, ...described };
    if (model && current.sha256) await this.#files.changing(id);
    this.#records.setPending(id, facts);
    if (mmproj) await this.#files.commit(mmproj, this.#files.pathFor(current, "mmproj"));
    if (model) await this.#files.commit(model, this.#files.pathFor(current, "model"));
    this.#records.commitFiles(id, facts);
    return toModel(this.#records.require(id));
  }

  /** Cancels every transfer, for shutdown; downloads end with a 503 message. */
  cancelAll(message: string): void {
    this.#transfers.cancelEverything(new Unavailable(message));
  }
}

/** A source as logs name it. */
function describe(source: FileSource): string {
  return source.label === "url" ? source.url : `node ${source.label.node}`;
}

/**
 * Walks the GGUF headers of the written files (the model file of a GGUF kind, and a vlm's
 * projector) and returns what the record keeps of the model file's; 400 when one cannot be read.
 */
async function describeWritten(kind: Kind, written: WrittenFiles): Promise<ModelFileFacts> {
  if (written.mmproj) {
    await describeModelFile(written.mmproj.tempPath, "gguf").catch((error) => {
      throw error instanceof Invalid ? new Invalid(`projector: ${error.message}`) : error;
    });
  }
  if (!written.model) return {};
  return await describeModelFile(written.model.tempPath, formatOf(kind));
}
