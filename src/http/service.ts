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
 * Starts a server: `start` puts what it opens on the stack and resolves with the address it
 * listens on; the server then owns the stack, and only `shutdown` ends it. A start that fails ends
 * what it had opened, in reverse, and throws its own error: a cleanup that fails as well is
 * logged, never thrown in its place (`await using` would throw a SuppressedError, whose message
 * says nothing of the cause, and a configuration error would lose its exit code).
 */
export async function startOrUnwind(
  start: (stack: AsyncDisposableStack) => Promise<Deno.NetAddr>,
): Promise<RunningServer> {
  const stack = new AsyncDisposableStack();
  try {
    const { hostname, port } = await start(stack);
    return { hostname, port, shutdown: () => stack.disposeAsync().catch(unwrapped) };
  } catch (error) {
    await stack.disposeAsync().catch((failure) =>
      console.error(`while ending a start that failed: ${causes(failure).join("; ")}`)
    );
    throw error;
  }
}

/** A failed shutdown's error, saying every cause (a SuppressedError's own message says none). */
function unwrapped(error: unknown): never {
  if (!(error instanceof SuppressedError)) throw error;
  throw new Error(causes(error).join("; "), { cause: error });
}

/** The messages of an error and of every error a SuppressedError holds. */
export function causes(error: unknown): string[] {
  if (error instanceof SuppressedError) {
    return [...causes(error.error), ...causes(error.suppressed)];
  }
  return [error instanceof Error ? error.message : String(error)];
}
