/**
 * The sandboxed worker's module (bundled into bundles/sandbox_sources.ts as sandbox_worker.js).
 * Started by the host's main thread (`deno run`), it talks to its parent; started by the single
 * executable under the name LINKED_SANDBOX, its first message is a port to the host, a sibling
 * worker (host/container_workers.ts); started in a client's process under the name
 * GROUP_SANDBOX, its first message is a port to the host, a port for its channel's bytes and
 * the node's socket for the process if there is one (host/tenant_host.ts).
 *
 * @module
 */
import type { BytePort } from "./host_globals.ts";
import { GROUP_SANDBOX, LINKED_SANDBOX } from "../host_protocol.ts";
import { type HostLink, serveSandbox } from "./sandbox_worker.ts";

const scope = self as unknown as HostLink & { name: string };
if (scope.name === GROUP_SANDBOX) {
  scope.onmessage = (
    event: MessageEvent<{ host: MessagePort; pipe: MessagePort; socket?: string }>,
  ) => {
    scope.onmessage = null;
    const { host, pipe, socket } = event.data;
    serveSandbox(host, pipe as unknown as BytePort, socket);
  };
} else if (scope.name === LINKED_SANDBOX) {
  scope.onmessage = (event: MessageEvent<{ host: MessagePort }>) => {
    scope.onmessage = null;
    serveSandbox(event.data.host);
  };
} else {
  serveSandbox();
}
