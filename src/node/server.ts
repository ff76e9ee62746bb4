/**
 * Assembles a node: its parts (./dependencies.ts), its services (./service_list.ts) mounted on
 * one pipeline, microservices behind what no service answers, and the HTTP server. Everything
 * that must be ended is on one stack, so a start that fails and a shutdown unwind the same way.
 * Put on it in this order, ended in the reverse one:
 *
 * 1. the database, 2. the model files (as they open, in ./dependencies.ts);
 * 3. link-local discovery, 4. the inference engine, 5. the containers (afterTheServer);
 * 6. the HTTP server; 7. the hub link;
 * 8. each service's own end (the registry's downloads), which comes first of all.
 *
 * @module
 */
import {
  mountServices,
  reservedPrefixes,
  routeHint,
  type RunningServer,
  startOrUnwind,
  startServices,
} from "../http/service.ts";
import { microserviceGateway } from "../mcm/gateway.ts";
import type { Settings } from "./config.ts";
import { buildDependencies, type NodeDependencies } from "./dependencies.ts";
import { nodeServiceList } from "./service_list.ts";

/** A node that is serving: its shutdown lets running requests finish and closes the database. */
export type RunningNode = RunningServer;

/**
 * What stops after the server, in the order of the stack (the last put is the first ended):
 * link-local discovery says goodbye after the server has stopped, so that peers checking it find
 * the node gone; the engine stops after the containers, which may still call it; the containers
 * stop after the server, whose running requests they answer.
 */
function afterTheServer(stack: AsyncDisposableStack, deps: NodeDependencies): void {
  const { linkLocal, engine, deployments } = deps;
  stack.defer(() => linkLocal.stop());
  stack.defer(() => engine.close());
  stack.defer(() => deployments.stopAll());
}

/** Starts a node with these settings; resolves once it listens. */
export function startNode(settings: Settings): Promise<RunningNode> {
  return startOrUnwind((stack) => startParts(settings, stack));
}

/** Opens the node's parts on `stack`, mounts its services and listens; resolves with where. */
async function startParts(settings: Settings, stack: AsyncDisposableStack): Promise<Deno.NetAddr> {
  // Ended last, in reverse: the database, then the model files (put there as they open).
  const deps = await buildDependencies(settings, stack);
  const services = nodeServiceList(deps);
  const { pipeline, linkLocal, hub } = deps;
  mountServices(pipeline, services);
  deps.reserved.push(...reservedPrefixes(services));
  pipeline.notFound(
    microserviceGateway(deps.deployments, {
      port: () => deps.listening.port,
      hint: routeHint(services),
    }),
  );
  afterTheServer(stack, deps);
  const { server, addr } = await pipeline.listen(settings.host, settings.port);
  stack.defer(() => server.shutdown());
  deps.listening.port = addr.port;
  await linkLocal.start(settings.host);
  if (hub) {
    hub.start();
    // Before the server: no more requests come through the hub while the server drains.
    stack.defer(() => hub.stop());
  }
  // First ended: each service's own (the registry's downloads, which would hold the server open).
  await startServices(services, stack);
  return addr;
}
