/**
 * The model registry: records and their files as clients list, read, change and delete them,
 * independent of HTTP. Provisioning files (upload, download) is in provisioning.ts.
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
import { Conflict, Invalid, NotFound } from "../errors/mod.ts";
import type { FileToServe } from "../http/file_response.ts";
import { formatOf } from "./model_format.ts";
import { type FileRole, type ModelFiles, storedFileName } from "./model_files.ts";
import { type ModelRecords, notFound, toModel } from "./model_records.ts";
import { recoverStore, type RecoveryReport } from "./recovery.ts";
import type { Transfers } from "./transfers.ts";

function checkConfigFits(kind: Kind, config: { gguf?: Gguf; onnx?: Onnx }): void {
  if (config.gguf && formatOf(kind) !== "gguf") {
    throw new Invalid(
      `field 'gguf' is only for kinds llm, vlm and embed; use 'onnx' for kind ${kind}`,
    );
  }
  if (config.onnx && kind !== "onnx") {
    throw new Invalid(`field 'onnx' is only for kind onnx; use 'gguf' for kind ${kind}`);
  }
}

function merged<T extends object>(old: T | undefined, update: T | undefined): T | undefined {
  return update === undefined ? old : { ...old, ...update };
}

/** Model records and their files. */
export class ModelRegistry {
  readonly #records: ModelRecords;
  readonly #files: ModelFiles;
  readonly #transfers: Transfers;

  /** A registry over these records and files; `transfers` is shared with provisioning. */
  constructor(records: ModelRecords, files: ModelFiles, transfers: Transfers) {
    this.#records = records;
    this.#files = files;
    this.#transfers = transfers;
  }

  /** Moves on with every change to the records (see JsonCache). */
  get generation(): number {
    return this.#records.generation;
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
      return { model: toModel(this.#records.require(input.id)), created: true };
    }
    const sameFormat = formatOf(existing.kind) === formatOf(input.kind);
    if (existing.ready && !sameFormat) {
      throw new Conflict(
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
    return { model: toModel(this.#records.require(input.id)), created: false };
  }

  /** Merges new gguf/onnx settings into a record, field by field. */
  update(input: UpdateModelRequest): Model {
    const existing = this.#records.require(input.id);
    checkConfigFits(existing.kind, input);
    this.#records.updateMetadata({
      ...existing,
      gguf: merged(existing.gguf, input.gguf),
      onnx: merged(existing.onnx, input.onnx),
    });
    return toModel(this.#records.require(input.id));
  }

  /** Models, oldest first. */
  list(filter: { kind?: Kind; ready?: boolean }): Model[] {
    return this.#records.list(filter).map(toModel);
  }

  /** One model. */
  get(id: string): Model {
    return toModel(this.#records.require(id));
  }

  /** Deletes a record, cancels its transfers and removes its files. */
  async remove(id: string): Promise<void> {
    this.#records.require(id);
    this.#transfers.cancelAll(id, "the model was deleted");
    await this.#transfers.exclusive(id, async () => {
      if (!this.#records.delete(id)) throw notFound(id);
      // The record is gone first: a crash here leaves a folder that start-up removes.
      await this.#files.removeModel(id);
    });
  }

  /** A file to serve, or 404 when the model or that file does not exist. */
  mediaFile(id: string, role: FileRole = "model"): FileToServe {
    const record = this.#records.require(id);
    const stored = role === "mmproj" ? record.mmproj : record.ready ? record : undefined;
    if (!stored?.sha256) {
      throw new NotFound(
        role === "mmproj"
          ? `model '${id}' has no projector file (only a vlm has one)`
          : `model '${id}' has no file yet: upload or download it first`,
        { resource: role === "mmproj" ? "projector file" : "model file", id },
      );
    }
    return {
      path: this.#files.pathFor(record, role),
      etag: stored.sha256,
      contentType: "application/octet-stream",
      filename: storedFileName(record, role),
    };
  }

  /** Makes records and files agree after a restart (see recoverStore). */
  recover(): Promise<RecoveryReport> {
    return recoverStore(this.#records, this.#files);
  }
}
