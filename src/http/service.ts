/**
 * A service of a node or a hub, described: the paths it owns, how it mounts its routes on the
 * pipeline, and what it starts and stops. Each service package's `service.ts` builds its own from
 * the dependencies it is given; the composition root mounts every one in a loop, reserves their
 * paths for itself and names them in its 404 answer.
 *
 * @example
 * ```ts
 * import { Pipeline } from "./pipeline.ts";
 * import { mountServices, routeHint, type Service } from "./service.ts";
 *
 * const health: Service = {
 *   name: "health",
 *   prefixes: ["/health"],
 *   hint: "the health check at /health",
 *   mount: (pipeline) => pipeline.route("GET", "/health", () => Response.json({ ok: true })),
 * };
 * const pipeline = new Pipeline({ notFound: () => new Response(routeHint([health])) });
 * mountServices(pipeline, [health]);
 * ```
 *
 * @module
 */
import type { Pipeline } from "./pipeline.ts";

/** One service: its paths, its routes, its lifetime. */
export interface Service {
  /** What it is, for logs and errors: "store", "mcm". */
  readonly name: string;
  /**
   * The path prefixes it owns: no microservice may take them (deployment refuses an alias that
   * would shadow one).
   */
  readonly prefixes: readonly string[];
  /** How the 404 answer points to it ("the model registry is under /ai/store/v1"); none: unnamed. */
  readonly hint?: string;
  /** Registers its routes. */
  mount(pipeline: Pipeline): void;
  /** Runs once the server listens (restoring what it ran before, say). */
  start?(): void | Promise<void>;
  /**
   * Ends what it holds open, before the server stops: the composition root puts it on its stack
   * once the service started, so it runs before the server's shutdown.
   */
  [Symbol.asyncDispose]?(): PromiseLike<void>;
}

/** Mounts every service on the pipeline, in order. */
export function mountServices(pipeline: Pipeline, services: readonly Service[]): void {
  for (const service of services) service.mount(pipeline);
}

/** Every prefix the services own. */
export function reservedPrefixes(services: readonly Service[]): string[] {
  return services.flatMap((service) => service.prefixes);
}

/** The 404 hint: where each named service is, in the order of the list. */
export function routeHint(services: readonly Service[]): string {
  return services.flatMap((service) => service.hint ? [service.hint] : []).join(", ");
}

/**
 * Starts each service that has something to start, in order, and puts each one's disposal on
 * `stack`, so it is ended before what was on the stack before it (the server).
 */
export async function startServices(
  services: readonly Service[],
  stack: AsyncDisposableStack,
): Promise<void> {
  for (const service of services) {
    await service.start?.();
    if (service[Symbol.asyncDispose]) stack.use(service as AsyncDisposable);
  }
}

/** A server that is serving: where it listens, and how it stops. */
export interface RunningServer {
  /** The address it listens on, with the port actually bound. */
  hostname: string;
  port: number;
  /** Ends everything it holds, in reverse order of creation. */
  shutdown(): Promise<void>;
}

/**
 * The server listening at `addr`, owning what `stack` holds: moved out of it, so that leaving the
 * start's scope ends nothing, and only `shutdown` does.
 */
export function runningServer(addr: Deno.NetAddr, stack: AsyncDisposableStack): RunningServer {
  const resources = stack.move();
  return { hostname: addr.hostname, port: addr.port, shutdown: () => resources.disposeAsync() };
}
