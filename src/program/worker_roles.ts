/**
 * The single executable's workers (src/program/self_program.ts): what each part does once it is
 * told its role. (Its container processes: src/mcm/sandbox/host/container_workers.ts.)
 *
 * @module
 */
import { listenForStop, type RoleMessage } from "./self_program.ts";

/** A worker's global scope (lib.deno.worker's, which this file is not type-checked with). */
interface WorkerScope {
  onmessage: ((event: MessageEvent) => void) | null;
  postMessage(message: unknown): void;
}

/** Whether this code runs in a worker rather than a process's main thread. */
export function inWorker(): boolean {
  return "WorkerGlobalScope" in globalThis;
}

/**
 * Waits for this worker's role and plays it: `main` runs the program's `main(args)` (the node or
 * hub) and stops when the launcher says so.
 */
export function acceptRole(main: (args: string[]) => Promise<number>): void {
  const scope = self as unknown as WorkerScope;
  const exit = (code: number) => scope.postMessage({ exit: code });
  scope.onmessage = (event: MessageEvent<RoleMessage>) => {
    const message = event.data;
    const stop = Promise.withResolvers<string>();
    scope.onmessage = (event: MessageEvent<{ stop?: string }>) => {
      if (event.data?.stop) stop.resolve(event.data.stop);
    };
    listenForStop(stop.promise, message.settings);
    main(message.args).then(exit, (error) => {
      console.error(error);
      exit(1);
    });
  };
}
