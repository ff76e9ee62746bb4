/**
 * Downloads as clients see them: one transfer per model, shared by every client that asks for
 * it while it runs, each client reading progress from its own event stream. The transfer is
 * cancelled when its last client disconnects.
 *
 * @module
 */
import type { DownloadModelRequest, Model } from "../../gen/store/validators.ts";
import { Cancelled, Conflict, DomainError } from "../errors/mod.ts";
import { HTTP_STATUS_OF } from "../http/error_statuses.ts";
import { type EventStream, eventStream } from "../http/sse.ts";
import type { FileRole } from "./model_files.ts";
import type { Provisioning } from "./provisioning.ts";

/** Progress messages per second, at most, per stream. */
const PROGRESS_INTERVAL_MS = 250;

type Progress = { size: number; totalSize?: number };

/** The message for one file's progress, as the spec shapes it. */
function progressMessage(role: FileRole, progress: Progress): unknown {
  return role === "mmproj" ? { mmproj: progress } : progress;
}

/** The message that ends a stream on failure. */
function errorMessage(error: unknown): { error: { code: number; message: string } } {
  if (error instanceof DomainError) {
    return { error: { code: HTTP_STATUS_OF[error.kind], message: error.message } };
  }
  console.error("download failed:", error);
  return { error: { code: 500, message: `the download failed: ${(error as Error)?.message}` } };
}

/** One running transfer and the streams that follow it. */
class Job {
  readonly key: string;
  readonly controller = new AbortController();
  readonly streams = new Set<EventStream>();
  readonly progress = new Map<FileRole, Progress>();
  #changed = new Set<FileRole>();
  #ticker = setInterval(() => this.flush(), PROGRESS_INTERVAL_MS);

  constructor(key: string) {
    this.key = key;
  }

  update(role: FileRole, size: number, totalSize?: number): void {
    const last = this.progress.get(role);
    if (last?.size === size && last.totalSize === totalSize) return;
    this.progress.set(role, totalSize === undefined ? { size } : { size, totalSize });
    this.#changed.add(role);
    // Completion is always reported, whatever the throttle.
    if (size === totalSize) this.flush();
  }

  flush(): void {
    for (const role of this.#changed) {
      this.broadcast(progressMessage(role, this.progress.get(role)!));
    }
    this.#changed.clear();
  }

  broadcast(message: unknown): void {
    for (const stream of this.streams) stream.send(message);
  }

  finish(message: unknown): void {
    clearInterval(this.#ticker);
    this.flush();
    this.broadcast(message);
    for (const stream of this.streams) stream.close();
    this.streams.clear();
  }
}

/** Starts and joins downloads. */
export class Downloads {
  readonly #provisioning: Provisioning;
  readonly #jobs = new Map<string, Job>();

  /** Downloads through this provisioning. */
  constructor(provisioning: Provisioning) {
    this.#provisioning = provisioning;
  }

  /**
   * Answers a download request: a plain error when the request is wrong, otherwise an event
   * stream following the model's transfer (started now, or joined when one runs).
   */
  start(id: string, request: DownloadModelRequest): Response {
    const model = this.#provisioning.checkDownload(id, request);
    const key = JSON.stringify([request.url, request.mmprojUrl ?? null]);
    const running = this.#jobs.get(id);
    if (running && running.key !== key) {
      throw new Conflict(
        `model '${id}' is already downloading from other URLs; wait for it, or DELETE the model`,
      );
    }
    if (!running && model.readyToUse && !request.force) return this.#alreadyReady(model);
    const job = running ?? this.#run(id, request, key);
    const stream = eventStream(() => {
      job.streams.delete(stream);
      if (job.streams.size === 0) this.#cancel(id, job);
    });
    job.streams.add(stream);
    for (const [role, progress] of job.progress) stream.send(progressMessage(role, progress));
    return stream.response;
  }

  /** A ready model keeps its file: 100% progress and done, at once. */
  #alreadyReady(model: Model): Response {
    const stream = eventStream(() => {});
    if (model.mmproj) {
      stream.send({ mmproj: { size: model.mmproj.totalSize, totalSize: model.mmproj.totalSize } });
    }
    stream.send({ size: model.totalSize, totalSize: model.totalSize });
    stream.send({ done: true, model });
    stream.close();
    return stream.response;
  }

  #run(id: string, request: DownloadModelRequest, key: string): Job {
    const job = new Job(key);
    this.#jobs.set(id, job);
    this.#provisioning
      .download(
        id,
        request,
        job.controller.signal,
        (role, size, total) => job.update(role, size, total),
      )
      .then(
        (model) => job.finish({ done: true, model }),
        (error) => job.finish(errorMessage(error)),
      )
      .finally(() => {
        if (this.#jobs.get(id) === job) this.#jobs.delete(id);
      });
    return job;
  }

  /** Cancels a job nobody follows; a request arriving meanwhile starts a fresh one. */
  #cancel(id: string, job: Job): void {
    if (this.#jobs.get(id) === job) this.#jobs.delete(id);
    job.controller.abort(new Cancelled("every client disconnected"));
  }
}
