/**
 * The request pipeline of the node and the hub: preflight, route lookup, the service's handler,
 * errors as responses, CORS on the way out. It stays synchronous while every step is: a handler
 * that answers at once (a cached record, an API key check) returns its Response to Deno.serve
 * without a promise in between, which Deno serves on its fast path.
 *
 * @example
 * ```ts
 * import { Pipeline } from "./pipeline.ts";
 *
 * const pipeline = new Pipeline({ notFound: (context) => Response.json({ path: context.path }) });
 * pipeline.route("GET", "/health", () => Response.json({ status: "ok" }));
 * Deno.serve({ port: 0 }, (request, info) => pipeline.serve(request, info));
 * ```
 *
 * @module
 */
import { ConfigError } from "../config/config_error.ts";
import { carriesCors, preflightHeaders } from "./cors.ts";
import { type ErrorFormat, errorResponse, responseForError } from "./errors.ts";
import { splitTarget, splitUrl } from "./request_target.ts";
import { RouteTree } from "./route_tree.ts";

export { splitUrl };

/** What the pipeline knows of a request, handed to every step instead of side tables. */
export interface RequestContext {
  readonly request: Request;
  /** The path, as sent (not decoded). */
  readonly path: string;
  /** The query string with its `?`, or "". */
  readonly search: string;
  /** The address of the peer that sent the request ("" when not known). */
  readonly remote: string;
  /**
   * Whether the request counts as carrying the API key without it: set only by code inside the
   * process (a tunnelled request whose token the node verified), so no header can fake it.
   */
  readonly apiKeyGranted: boolean;
  /**
   * The account the hub verified the caller's token for, on a request that came through the
   * hub's tunnel (undefined otherwise): set only by the tunnel's code, so no header can fake it.
   */
  readonly hubAccount: string | undefined;
  /** Path parameters of the matched route, as sent. */
  params: Record<string, string>;
  /**
   * A header of the request as `request.headers.get` gives it (`name` in lower case), read
   * without building the Request when it was given by its parts.
   */
  header(name: string): string | null;
}

/** A step that answers a request. */
export type Step = (context: RequestContext) => Response | Promise<Response>;

/** Where a request came from, as Deno.serve tells (or a tunnel tells). */
export interface Origin {
  /** Deno.serve's connection info; its address is read only when a step asks for `remote`. */
  info?: Deno.ServeHandlerInfo;
  /** See RequestContext. */
  apiKeyGranted?: boolean;
  /** See RequestContext. */
  hubAccount?: string;
}

/**
 * A request known by its parts (a tunnelled one), its Request built only when a step reads it:
 * building one validates and copies every header, the largest cost of a small tunnelled GET.
 */
export interface RequestParts {
  /** The method, as Request would normalize it (the tunnel passes only GET and HEAD). */
  readonly method: string;
  /** The path and query string, as the Request's URL would hold them. */
  readonly target: string;
  /** Builds the Request; called at most once per request. */
  request(): Request;
  /** What the Request's `headers.get(name)` would give (`name` in lower case). */
  header(name: string): string | null;
}

/**
 * The context of one request; the peer's address is an op call, so it is read on demand, and a
 * request given by its parts is built when first read.
 */
class Context implements RequestContext {
  #request: Request | undefined;
  readonly #parts: RequestParts | undefined;
  readonly path: string;
  readonly search: string;
  readonly apiKeyGranted: boolean;
  readonly hubAccount: string | undefined;
  params: Record<string, string> = {};
  readonly #info: Deno.ServeHandlerInfo | undefined;

  constructor(
    request: Request | RequestParts,
    url: { path: string; search: string },
    origin: Origin,
  ) {
    if (request instanceof Request) this.#request = request;
    else this.#parts = request;
    this.path = url.path;
    this.search = url.search;
    this.apiKeyGranted = origin.apiKeyGranted === true;
    this.hubAccount = origin.hubAccount;
    this.#info = origin.info;
  }

  get request(): Request {
    return this.#request ??= this.#parts!.request();
  }

  header(name: string): string | null {
    return this.#request === undefined && this.#parts
      ? this.#parts.header(name)
      : this.#request!.headers.get(name);
  }

  /** The peer's address; "" when unknown (Deno forgets it once a request is upgraded). */
  get remote(): string {
    try {
      const address = this.#info?.remoteAddr;
      return address && "hostname" in address ? address.hostname : "";
    } catch {
      return "";
    }
  }
}

/** How a pipeline answers what no route does, and how it shapes errors and CORS. */
export interface PipelineOptions {
  /**
   * Answers requests no route matches (the microservices, else a 404); also set by
   * `Pipeline.notFound`. A plain 404 by default.
   */
  notFound?: Step;
  /** Whether a request came from elsewhere (through the hub): `local` routes refuse it. */
  isRemote?: (context: RequestContext) => boolean;
  /** Runs before the route lookup; a Response it returns is the answer. */
  before?: (context: RequestContext) => Response | Promise<Response> | undefined;
  /** The shape of errors the pipeline itself answers (405, 500). */
  errorFormat?: ErrorFormat;
  /** Request headers a browser may send, listed in the preflight answer. */
  allowHeaders?: readonly string[];
  /** Response statuses whose headers stay as they are (101: the WebSocket upgrade). */
  keepHeadersOf?: readonly number[];
}

/** How one route answers besides its step. */
export interface RouteOptions {
  /** The shape of the 403 and 405 answers on this route; the pipeline's by default. */
  errorFormat?: ErrorFormat;
  /** Whether the route is for local callers only: 403 to requests that came through the hub. */
  local?: boolean;
}

/** Routes and the steps around them, for one server. */
export class Pipeline {
  readonly #tree = new RouteTree<{ step: Step; format: ErrorFormat; local: boolean }>();
  readonly #options: PipelineOptions;
  readonly #format: ErrorFormat;
  readonly #preflight: Record<string, string>;
  #notFound: Step;

  /** A pipeline with no routes yet. */
  constructor(options: PipelineOptions) {
    this.#options = options;
    this.#format = options.errorFormat ?? errorResponse;
    this.#preflight = preflightHeaders(options.allowHeaders ?? []);
    this.#notFound = options.notFound ??
      (({ request, path }) => this.#format(404, `no route for ${request.method} ${path}`));
  }

  /**
   * Answers what no route does with `step` from now on (as Hono's `app.notFound`): a server whose
   * fallback depends on what was mounted sets it once its services are.
   */
  notFound(step: Step): void {
    this.#notFound = step;
  }

  /**
   * Answers `method` on `pattern` (`:name` segments are parameters) with `step`; other methods on
   * the same pattern get a 405 in `options.errorFormat` (the pipeline's by default). A `local`
   * route answers 403 to requests `isRemote` says came from elsewhere (through the hub).
   */
  route(method: string, pattern: string, step: Step, options: RouteOptions = {}): void {
    this.#tree.add(method, pattern, {
      step,
      format: options.errorFormat ?? this.#format,
      local: options.local === true,
    });
  }

  /**
   * Serves this pipeline on `hostname:port`; resolves once it listens. An address that cannot be
   * had is a ConfigError naming it and the fix, not the OS's bare "os error 98".
   */
  async listen(
    hostname: string,
    port: number,
  ): Promise<{ server: Deno.HttpServer<Deno.NetAddr>; addr: Deno.NetAddr }> {
    const { promise: listening, resolve } = Promise.withResolvers<Deno.NetAddr>();
    let server: Deno.HttpServer<Deno.NetAddr>;
    try {
      server = Deno.serve(
        { hostname, port, onListen: resolve },
        (request, info) => this.serve(request, { info }),
      );
    } catch (error) {
      throw listenError(hostname, port, error);
    }
    return { server, addr: await listening };
  }

  /** The Deno.serve handler. */
  serve(request: Request, origin: Origin = {}): Response | Promise<Response> {
    if (request.method === "OPTIONS") {
      return new Response(null, { status: 204, headers: this.#preflight });
    }
    return this.#run(request.method, new Context(request, splitUrl(request.url), origin));
  }

  /**
   * Serves a request given by its parts, as `serve` would serve the Request they make: the
   * Request is built only if a step reads it (a tunnelled GET answered from the route alone
   * needs none).
   */
  serveParts(parts: RequestParts, origin: Origin = {}): Response | Promise<Response> {
    if (parts.method === "OPTIONS") {
      return new Response(null, { status: 204, headers: this.#preflight });
    }
    return this.#run(parts.method, new Context(parts, splitTarget(parts.target), origin));
  }

  #run(method: string, context: Context): Response | Promise<Response> {
    try {
      const answer = this.#answer(method, context);
      return answer instanceof Promise
        ? answer.then((response) => this.#out(response), (error) => this.#failed(error, context))
        : this.#out(answer);
    } catch (error) {
      return this.#failed(error, context);
    }
  }

  #answer(method: string, context: RequestContext): Response | Promise<Response> {
    const early = this.#options.before?.(context);
    if (early) return early;
    const found = this.#tree.find(method, context.path);
    if (found.kind === "match") {
      // Decided on the route matched, not on the path's spelling (`//jsonrpc/v1` is this route).
      if (found.value.local && this.#options.isRemote?.(context)) {
        return found.value.format(
          403,
          "this endpoint is for local callers only, not through the hub",
        );
      }
      context.params = found.params;
      return found.value.step(context);
    }
    if (found.kind === "method") {
      const methods = found.allow.includes("GET") && !found.allow.includes("HEAD")
        ? [...found.allow, "HEAD"]
        : found.allow;
      const allow = [...methods, "OPTIONS"].join(", ");
      return found.other.format(
        405,
        `${method} is not allowed here; use ${allow}`,
        {
          Allow: allow,
        },
      );
    }
    return this.#notFound(context);
  }

  #failed(error: unknown, context: RequestContext): Response {
    return this.#out(responseForError(error, context.request, this.#format));
  }

  #out(response: Response): Response {
    // Typed answers (reply.ts) say so without their headers being read (cors.ts).
    if (carriesCors(response)) return response;
    if (this.#options.keepHeadersOf?.includes(response.status)) return response;
    // File answers carry it from the start too; a microservice's own CORS answer is kept.
    if (response.headers.has("access-control-allow-origin")) return response;
    try {
      response.headers.set("Access-Control-Allow-Origin", "*");
    } catch {
      response = new Response(response.body, response); // Immutable headers (a fetch's answer).
      response.headers.set("Access-Control-Allow-Origin", "*");
    }
    return response;
  }
}

/**
 * Why `hostname:port` cannot be listened on, as a ConfigError naming the address and the fix
 * (the launcher checks the address with it before it creates a fresh config: src/node/launcher.ts).
 */
export function listenError(hostname: string, port: number, error: unknown): ConfigError {
  const where = `${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
  if (error instanceof Deno.errors.AddrInUse) {
    return new ConfigError(
      `${where} is in use by another program (another edgenode?); stop it or pass another --port`,
    );
  }
  return new ConfigError(
    `cannot listen on ${where}: ${
      (error as Error).message
    }; --host takes an address of this machine (0.0.0.0 for every interface)`,
  );
}
