/**
 * Downloads as clients see them: one transfer per model, shared by every client that asks for
 * it while it runs, each client following it through its own stream of events. The transfer is
 * cancelled when its last follower goes. How the events travel (Server-Sent Events) is the
 * route's business (routes.ts).
 *
 * @module
 */
import type { DownloadModelRequest, Model } from "../../gen/store/validators.ts";
import { Cancelled, Conflict } from "../errors/mod.ts";
import type { DownloadSource } from "./download_file.ts";
import type { FileRole } from "./model_files.ts";
import type { Provisioning } from "./provisioning.ts";

/** Progress messages per second, at most, per stream. */
const PROGRESS_INTERVAL_MS = 250;

type Progress = { size: number; totalSize?: number; source?: DownloadSource };

/** What a follower of a download hears: progress, then the model or the failure. */
export type DownloadEvent =
  | Progress
  | { mmproj: Progress }
  | { done: true; model: Model }
  | { failed: unknown };

/** The event for one file's progress, as the spec shapes it. */
function progressEvent(role: FileRole, progress: Progress): DownloadEvent {
  return role === "mmproj" ? { mmproj: progress } : progress;
}

/** One client following a transfer. */
type Follower = ReadableStreamDefaultController<DownloadEvent>;

/** One running transfer and the followers it has. */
class Job {
  readonly key: string;
  readonly controller = new AbortController();
  readonly streams = new Set<Follower>();
  readonly progress = new Map<FileRole, Progress>();
  #changed = new Set<FileRole>();
  #ticker = setInterval(() => this.flush(), PROGRESS_INTERVAL_MS);

  constructor(key: string) {
    this.key = key;
  }

  update(role: FileRole, size: number, totalSize?: number, source?: DownloadSource): void {
    const last = this.progress.get(role);
    const moved = JSON.stringify(last?.source) !== JSON.stringify(source);
    if (last?.size === size && last.totalSize === totalSize && !moved) return;
    this.progress.set(role, {
      size,
      ...(totalSize === undefined ? {} : { totalSize }),
      ...(source === undefined ? {} : { source }),
    });
    this.#changed.add(role);
    // Completion is always reported, whatever the throttle, and so is a change of source.
    if (size === totalSize || (moved && last !== undefined)) this.flush();
  }

  flush(): void {
    for (const role of this.#changed) {
      this.broadcast(progressEvent(role, this.progress.get(role)!));
    }
    this.#changed.clear();
  }

  broadcast(event: DownloadEvent): void {
    for (const stream of this.streams) stream.enqueue(event);
  }

  finish(event: DownloadEvent): void {
    clearInterval(this.#ticker);
    this.flush();
    this.broadcast(event);
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
   * Follows the model's transfer (started now, or joined when one runs); throws at once when the
   * request is wrong. Cancelling the stream leaves the transfer; the last to leave cancels it.
   */
  start(id: string, request: DownloadModelRequest): ReadableStream<DownloadEvent> {
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
    let follower: Follower;
    return new ReadableStream<DownloadEvent>({
      start: (controller) => {
        follower = controller;
        job.streams.add(controller);
        for (const [role, progress] of job.progress) {
          controller.enqueue(progressEvent(role, progress));
        }
      },
      cancel: () => {
        job.streams.delete(follower);
        if (job.streams.size === 0) this.#cancel(id, job);
      },
    });
  }

  /** A ready model keeps its file: 100% progress and done, at once. */
  #alreadyReady(model: Model): ReadableStream<DownloadEvent> {
    const events: DownloadEvent[] = [];
    if (model.mmproj) {
      events.push({ mmproj: { size: model.mmproj.totalSize, totalSize: model.mmproj.totalSize } });
    }
    const size = model.totalSize ?? 0; // Set on every ready model.
    events.push({ size, totalSize: size }, { done: true, model });
    return ReadableStream.from(events);
  }

  #run(id: string, request: DownloadModelRequest, key: string): Job {
    const job = new Job(key);
    this.#jobs.set(id, job);
    this.#provisioning
      .download(
        id,
        request,
        job.controller.signal,
        (role, size, total, source) => job.update(role, size, total, source),
      )
      .then(
        (model) => job.finish({ done: true, model }),
        (error) => job.finish({ failed: error }),
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
