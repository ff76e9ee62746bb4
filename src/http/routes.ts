/**
 * Registers handlers on an itty-router from a generated route table. The table says how each
 * operation's input is read and validated; the handler gets it parsed and typed. A table entry
 * without a handler is a type error.
 *
 * @module
 */
import type * as v from "valibot";
import type { IRequest, RouterType } from "itty-router";
import { requireApiKey } from "./auth.ts";
import { type ErrorFormat, errorResponse, HttpError, responseForError } from "./errors.ts";
import { queryObject, readJson, requireContentType, validate } from "./input.ts";

/** How an operation's request body is read. */
export type BodySpec =
  | { readonly kind: "none" }
  | {
    readonly kind: "json";
    readonly schema: v.GenericSchema;
    /** Media types whose body is JSON text (application/json and any the spec adds). */
    readonly contentTypes: readonly string[];
    /** Whether a body without a Content-Type is read as JSON too. */
    readonly untyped: boolean;
  }
  | { readonly kind: "stream"; readonly contentTypes: readonly string[] };

/** One generated route table entry. */
export interface RouteSpec {
  readonly method: string;
  readonly path: string;
  readonly auth: boolean;
  readonly params: v.GenericSchema;
  readonly query: v.GenericSchema;
  readonly body: BodySpec;
}

type BodyOf<B extends BodySpec> = B extends
  { kind: "json"; schema: infer S extends v.GenericSchema } ? v.InferOutput<S>
  : undefined;

/** What a handler receives: validated input plus the request itself (for streamed bodies). */
export interface OperationInput<R extends RouteSpec> {
  params: v.InferOutput<R["params"]>;
  query: v.InferOutput<R["query"]>;
  body: BodyOf<R["body"]>;
  request: Request;
}

/** One handler per operation of a route table. */
export type Handlers<T extends Record<string, RouteSpec>> = {
  [K in keyof T]: (input: OperationInput<T[K]>) => Response | Promise<Response>;
};

/** How a service is mounted. */
export interface MountOptions {
  /** Path prefixes the service answers under, such as `/ai/store/v1`. */
  prefixes: readonly string[];
  /** The key `Authorization: Bearer` must carry. */
  apiKey: string;
  /** Whether operations the spec leaves open (GETs) need the key too. */
  readsRequireKey?: boolean;
  /** The status of a wrong key: 403 (default) or 401. */
  wrongKeyStatus?: 401 | 403;
  /** The shape of this service's errors; the registry's by default. */
  errorFormat?: ErrorFormat;
  /**
   * Checks the credentials of every operation, before its input is read, in place of the API
   * key check (for a service with other credentials, such as mcm's tokens).
   */
  authorize?: (request: Request) => void | Promise<void>;
}

/** Registers every operation of `routes` under every prefix, then 405 for other methods. */
export function mountRoutes<T extends Record<string, RouteSpec>>(
  router: RouterType,
  routes: T,
  handlers: Handlers<T>,
  options: MountOptions,
): void {
  const methodsByPath = new Map<string, string[]>();
  for (const [operationId, route] of Object.entries(routes)) {
    const handler = handlers[operationId as keyof T] as (
      input: OperationInput<RouteSpec>,
    ) => Response | Promise<Response>;
    const needsKey = route.auth || options.readsRequireKey === true;
    const format = options.errorFormat ?? errorResponse;
    const serve = async (request: IRequest) => {
      try {
        return await respond(request);
      } catch (error) {
        return responseForError(error, request, format);
      }
    };
    const respond = async (request: IRequest) => {
      if (options.authorize) await options.authorize(request);
      else if (needsKey) requireApiKey(request, options.apiKey, options.wrongKeyStatus);
      const params = validate(route.params, request.params, "path");
      const query = validate(route.query, queryObject(new URL(request.url)), "query");
      let body: unknown = undefined;
      if (route.body.kind === "json") {
        const json = await readJson(request, route.body.contentTypes, route.body.untyped);
        if (typeof json !== "object" || json === null || Array.isArray(json)) {
          throw new HttpError(400, "body must be a JSON object");
        }
        body = validate(route.body.schema, json, "body");
      } else if (route.body.kind === "stream") {
        requireContentType(request, route.body.contentTypes);
      }
      return await handler({ params, query, body: body as undefined, request });
    };
    for (const prefix of options.prefixes) {
      const path = prefix + route.path;
      (router as unknown as Record<string, (path: string, h: unknown) => void>)[
        route.method.toLowerCase()
      ](path, serve);
      methodsByPath.set(path, [...(methodsByPath.get(path) ?? []), route.method]);
    }
  }
  for (const [path, methods] of methodsByPath) {
    const allow = [...methods, "OPTIONS"].join(", ");
    router.all(
      path,
      (request: IRequest) =>
        (options.errorFormat ?? errorResponse)(
          405,
          `${request.method} is not allowed here; use ${allow}`,
          { Allow: allow },
        ),
    );
  }
}
