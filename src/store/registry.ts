/**
 * The model registry: what each operation does to records and files, independent of HTTP.
 *
 * @module
 */
import type {
  CreateModelRequest,
  Gguf,
  Kind,
  Model,
  Onnx,
  UpdateModelRequest,
} from "../../gen/store/validators.ts";
import { HttpError } from "../http/errors.ts";
import type { FileToServe } from "../http/file_response.ts";
import type { UploadBody } from "../http/upload_body.ts";
import { formatOf, GGUF_HEADER_BYTES, headerProblem } from "./model_format.ts";
import { fileTooLarge, type ModelFiles, type WrittenFile } from "./model_files.ts";
import { type ModelRecord, type ModelRecords, toModel } from "./model_records.ts";
import { Transfers } from "./transfers.ts";

/** Settings of the registry. */
export interface RegistryOptions {
  /** Largest model file accepted, in bytes; unlimited when absent. */
  maxFileBytes?: number;
}

/** What start-up recovery found and did. */
export interface RecoveryReport {
  removedPartials: number;
  removedOrphanFolders: number;
  promotedPending: number;
  markedNotReady: string[];
}

const notFound = (id: string) => new HttpError(404, `model '${id}' does not exist`);
const deletedDuringUpload = (id: string) =>
  new HttpError(409, `model '${id}' was deleted while its file was being uploaded`);

function checkConfigFits(kind: Kind, config: { gguf?: Gguf; onnx?: Onnx }): void {
  if (config.gguf && formatOf(kind) !== "gguf") {
    throw new HttpError(
      400,
      `field 'gguf' is only for kinds llm, vlm and embed; use 'onnx' for kind ${kind}`,
    );
  }
  if (config.onnx && kind !== "onnx") {
    throw new HttpError(400, `field 'onnx' is only for kind onnx; use 'gguf' for kind ${kind}`);
  }
}

function merged<T extends object>(old: T | undefined, update: T | undefined): T | undefined {
  return update === undefined ? old : { ...old, ...update };
}

/** Model records and their files. */
export class ModelRegistry {
  readonly #records: ModelRecords;
  readonly #files: ModelFiles;
  readonly #options: RegistryOptions;
  readonly #transfers = new Transfers();

  /** A registry over these records and files. */
  constructor(records: ModelRecords, files: ModelFiles, options: RegistryOptions = {}) {
    this.#records = records;
    this.#files = files;
    this.#options = options;
  }

  /** Moves on with every change to the records (see JsonCache). */
  get generation(): number {
    return this.#records.generation;
  }

  #require(id: string): ModelRecord {
    return this.#records.get(id) ?? (() => {
      throw notFound(id);
    })();
  }

  /**
   * Creates a record, or merges the given metadata into an existing one (the file and its
   * readiness stay). A provisioned model cannot change to a kind with another file format.
   */
  create(input: CreateModelRequest): { model: Model; created: boolean } {
    checkConfigFits(input.kind, input);
    const existing = this.#records.get(input.id);
    if (!existing) {
      this.#records.insert({ ...input, gguf: input.gguf, onnx: input.onnx, createdAt: Date.now() });
      return { model: toModel(this.#require(input.id)), created: true };
    }
    const sameFormat = formatOf(existing.kind) === formatOf(input.kind);
    if (existing.ready && !sameFormat) {
      throw new HttpError(
        409,
        `model '${input.id}' holds a ${formatOf(existing.kind).toUpperCase()} file; ` +
          `kind ${input.kind} needs ${formatOf(input.kind).toUpperCase()}: delete the model first`,
      );
    }
    this.#records.updateMetadata({
      id: input.id,
      version: input.version,
      kind: input.kind,
      gguf: formatOf(input.kind) === "gguf" ? merged(existing.gguf, input.gguf) : undefined,
      onnx: input.kind === "onnx" ? merged(existing.onnx, input.onnx) : undefined,
    });
    return { model: toModel(this.#require(input.id)), created: false };
  }

  /** Merges new gguf/onnx settings into a record, field by field. */
  update(input: UpdateModelRequest): Model {
    const existing = this.#require(input.id);
    checkConfigFits(existing.kind, input);
    this.#records.updateMetadata({
      ...existing,
      gguf: merged(existing.gguf, input.gguf),
      onnx: merged(existing.onnx, input.onnx),
    });
    return toModel(this.#require(input.id));
  }

  /** Models, oldest first. */
  list(filter: { kind?: Kind; ready?: boolean }): Model[] {
    return this.#records.list(filter).map(toModel);
  }

  /** One model. */
  get(id: string): Model {
    return toModel(this.#require(id));
  }

  /** Deletes a record, cancels its transfers and removes its files. */
  async remove(id: string): Promise<void> {
    this.#require(id);
    this.#transfers.cancelAll(id, "the model was deleted");
    await this.#transfers.exclusive(id, async () => {
      if (!this.#records.delete(id)) throw notFound(id);
      // The record is gone first: a crash here leaves a folder that start-up removes.
      await this.#files.removeModel(id);
    });
  }

  /**
   * Provisions the model file from an upload. The file is written to a temporary name, checked,
   * and renamed into place; only then is the record marked ready. On any failure the old file
   * and record stay as they were.
   */
  async upload(id: string, body: UploadBody, expectedSha256?: string): Promise<Model> {
    const record = this.#require(id);
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
    const format = formatOf(record.kind);
    let written;
    try {
      written = await this.#files.writeTemp(id, `${id}.${format}`, body.chunks, {
        signal: controller.signal,
        maxBytes: maxFileBytes,
        headBytes: GGUF_HEADER_BYTES,
      });
      await body.complete.catch(async (error) => {
        await this.#files.discard(written!);
        throw error;
      });
    } catch (error) {
      if (controller.signal.aborted) {
        throw deletedDuringUpload(id);
      }
      throw error;
    } finally {
      this.#transfers.end(id, controller);
    }
    try {
      if (expectedSha256 && written.sha256 !== expectedSha256.toLowerCase()) {
        throw new HttpError(
          400,
          `sha256 mismatch: expected ${expectedSha256.toLowerCase()}, the upload has ${written.sha256}`,
        );
      }
      if (body.declaredSize !== undefined && written.size !== body.declaredSize) {
        throw new HttpError(
          400,
          `the body has ${written.size} bytes but Content-Length said ${body.declaredSize}`,
        );
      }
      return await this.#transfers.exclusive(id, () => this.#commit(id, written));
    } finally {
      await this.#files.discard(written);
    }
  }

  async #commit(id: string, written: WrittenFile): Promise<Model> {
    const current = this.#records.get(id);
    if (!current) {
      throw deletedDuringUpload(id);
    }
    const format = formatOf(current.kind);
    const problem = headerProblem(format, written.head, written.size);
    if (problem) throw new HttpError(400, `${problem}; the model's old state is unchanged`);
    this.#records.setPending(id, written.size, written.sha256);
    await this.#files.commit(written, this.#files.pathOf(id, format));
    this.#records.markReady(id, written.size, written.sha256);
    return toModel(this.#require(id));
  }

  /** The model file to serve, or 404 when the model or its file does not exist. */
  mediaFile(id: string): FileToServe {
    const record = this.#require(id);
    if (!record.ready || !record.sha256) {
      throw new HttpError(404, `model '${id}' has no file yet: upload or download it first`);
    }
    const format = formatOf(record.kind);
    return {
      path: this.#files.pathOf(id, format),
      etag: record.sha256,
      contentType: "application/octet-stream",
      filename: `${id}.${format}`,
    };
  }

  /**
   * Makes records and files agree after a restart: removes temporary files and folders without
   * a record, settles files that were renamed just before a crash, and marks records whose file
   * is missing or has the wrong size as not ready.
   */
  async recover(): Promise<RecoveryReport> {
    const { folders, removedPartials } = await this.#files.sweep();
    const report: RecoveryReport = {
      removedPartials,
      removedOrphanFolders: 0,
      promotedPending: 0,
      markedNotReady: [],
    };
    for (const folder of folders) {
      if (this.#records.get(folder)) continue;
      await this.#files.removeModel(folder);
      report.removedOrphanFolders++;
    }
    for (const record of this.#records.list()) {
      const path = this.#files.pathOf(record.id, formatOf(record.kind));
      let info = await this.#files.stat(path);
      if (record.pendingSha256 !== undefined) {
        const arrived = info?.size === record.pendingSize &&
          (await this.#files.hashFile(path)) === record.pendingSha256;
        if (arrived) {
          this.#records.markReady(record.id, record.pendingSize!, record.pendingSha256);
          report.promotedPending++;
          continue;
        }
        this.#records.clearPending(record.id);
        info = await this.#files.stat(path);
      }
      if (record.ready && info?.size !== record.totalSize) {
        this.#records.markNotReady(record.id);
        report.markedNotReady.push(record.id);
      }
    }
    return report;
  }
}
