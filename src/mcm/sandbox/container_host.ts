/**
 * The container process: one per running container, started by the node with permissions of
 * its own (read the sandbox's source, the bundle and its storage folder; write that folder;
 * connect where microservices may) and a heap limit, so that a crash, a runaway loop or memory
 * exhaustion ends this process only. Its main thread runs no user code: it keeps the storage and
 * relays outbound HTTP for the sandboxed worker, which runs the microservice.
 *
 * It runs bundled (gen/sandbox/sources.ts, written out by the node beside the bundled worker as
 * container_host.js and sandbox_worker.js): `deno task gen` after changing anything here.
 *
 * Usage: container_host.js BUNDLE_FILE STORAGE_DIR STORAGE_MAX_BYTES
 *
 * @module
 */
import { answerBuffer, answerSync } from "./context_services.ts";
import { serveOutbound } from "./outbound_relay.ts";
import { StorageHost } from "./storage_host.ts";

// The worker first: it loads on its own thread while this one opens the storage.
const worker = new Worker(new URL("./sandbox_worker.js", import.meta.url).href, {
  type: "module",
  name: "microservice",
  deno: { permissions: "none" },
});
const [bundle, storageDir, storageBytes] = Deno.args;
const code = Deno.readTextFileSync(bundle);
const storage = new StorageHost(storageDir, Number(storageBytes));

const storageChannel = new MessageChannel();
const storageAnswers = answerBuffer();
storageChannel.port1.onmessage = (event) => {
  answerSync(storageAnswers, storage.run(event.data));
};
const outboundChannel = new MessageChannel();
serveOutbound(outboundChannel.port1);
worker.onmessage = (event) => {
  if (event.data === "exit") Deno.exit(0);
};
worker.onerror = (event) => {
  event.preventDefault();
  console.error(`the microservice's worker failed: ${event.message}`);
  Deno.exit(70);
};
worker.postMessage({
  code,
  storagePort: storageChannel.port2,
  storageAnswers,
  outboundPort: outboundChannel.port2,
}, [storageChannel.port2, outboundChannel.port2]);
