/**
 * The sandboxed worker's module (bundled into bundles/sandbox_sources.ts as sandbox_worker.js).
 * Started by the host's main thread (`deno run`), it talks to its parent; started by the single
 * executable under the name LINKED_SANDBOX, its first message is a port to the host, a sibling
 * worker (src/program/container_workers.ts).
 *
 * @module
 */
import { type HostLink, LINKED_SANDBOX, serveSandbox } from "./sandbox_worker.ts";

const scope = self as unknown as HostLink & { name: string };
if (scope.name === LINKED_SANDBOX) {
  scope.onmessage = (event: MessageEvent<{ host: MessagePort }>) => {
    scope.onmessage = null;
    serveSandbox(event.data.host);
  };
} else {
  serveSandbox();
}
