/**
 * Registers handlers on the request pipeline from a generated route table. The table says how
 * each operation's input is read and validated; the handler gets it parsed and typed. A table
 * entry without a handler is a type error. An operation whose checks and handler are synchronous
 * answers synchronously (see pipeline.ts).
 *
 * @module
 */
import * as v from "valibot";
import { Invalid } from "../errors/mod.ts";
import { requireApiKeyIn } from "./auth.ts";
import { type ErrorFormat, errorResponse, responseForError } from "./errors.ts";
import type { StatusOverrides } from "./error_statuses.ts";
import { readJson, requireContentType } from "./input.ts";
import { validate } from "../streams/mod.ts";
import type { Pipeline, RequestContext } from "./pipeline.ts";
import type { RepliesOf } from "./reply.ts";

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
  /** The success answers of the operation, by status: a type only (its value is `{}`). */
  readonly responses: object;
}

type BodyOf<B extends BodySpec> = B extends
  { kind: "json"; schema: infer S extends v.GenericSchema } ? v.InferOutput<S>
  : undefined;

/** What a handler receives: validated input, the caller `authorize` found, the request. */
export interface OperationInput<R extends RouteSpec, A = undefined> {
  params: v.InferOutput<R["params"]>;
  query: v.InferOutput<R["query"]>;
  body: BodyOf<R["body"]>;
  /** What the mount's `authorize` returned (undefined without one). */
  auth: A;
  request: Request;
  context: RequestContext;
}

/** What a handler of operation `R` may answer: only the statuses and bodies its spec declares. */
export type AnswerOf<R extends RouteSpec> = RepliesOf<R["responses"]>;

/** One handler per operation of a route table, each answering as its operation declares. */
export type Handlers<T extends Record<string, RouteSpec>, A = undefined> = {
  [K in keyof T]: (
    input: OperationInput<T[K], A>,
  ) => AnswerOf<T[K]> | Promise<AnswerOf<T[K]>>;
};

/**
 * Answers an operation may give from what it prepared earlier, before its input is read and
 * validated: undefined means "not prepared", and the operation runs as usual. Only what the
 * operation's own handler answered for the same request, unchanged since (such as a record's
 * JSON kept until the next write), may be given here; the API key check runs before it. Not for
 * a mount with `authorize`, whose answers may differ by caller.
 */
export type PreparedAnswers<T extends Record<string, RouteSpec>> = {
  [K in keyof T]?: (context: RequestContext) => AnswerOf<T[K]> | undefined;
};

/** How a service is mounted. */
export interface MountOptions<A = undefined> {
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
  /** Whether the service is for local callers only (403 through the hub; spec/hub.yaml). */
  local?: boolean;
  /** Statuses this service's spec gives some kinds of domain error in place of the table's. */
  statusOverrides?: StatusOverrides;
  /**
   * Checks the credentials of every operation, before its input is read, in place of the API
   * key check (for a service with other credentials, such as mcm's tokens); what it returns is
   * the handler's `auth`. `needsKey`: whether the operation needs the API key (the spec's
   * security, or `readsRequireKey`), for a service that also takes the key.
   */
  authorize?: (context: RequestContext, needsKey: boolean) => A | Promise<A>;
}

/** A query string whose pairs URLSearchParams takes as they are: nothing to decode. */
const PLAIN_QUERY = /^\??[^%+\u0080-\uffff]*$/;

/** The pairs of a plain query string, as URLSearchParams gives them (no iterator, no op). */
function plainPairs(search: string): [string, string][] {
  const pairs: [string, string][] = [];
  for (const piece of search.slice(search.startsWith("?") ? 1 : 0).split("&")) {
    if (piece === "") continue;
    const equals = piece.indexOf("=");
    pairs.push(equals < 0 ? [piece, ""] : [piece.slice(0, equals), piece.slice(equals + 1)]);
  }
  return pairs;
}

/** The query string as an object; a parameter given twice is invalid. */
export function queryOf(search: string): Record<string, string> {
  const query: Record<string, string> = {};
  if (search.length <= 1) return query;
  const pairs = PLAIN_QUERY.test(search) ? plainPairs(search) : new URLSearchParams(search);
  for (const [key, value] of pairs) {
    if (key in query) throw new Invalid(`query parameter '${key}' is given more than once`);
    query[key] = value;
  }
  return query;
}

/**
 * A handler's input without a body, whose Request is read from the context when the handler
 * reads it: one given by its parts (pipeline.ts serveParts) is built only then. A class, so that
 * every input has one shape and the getter sits on the prototype.
 */
class BodilessInput implements OperationInput<RouteSpec, unknown> {
  readonly body = undefined;
  constructor(
    readonly params: unknown,
    readonly query: unknown,
    readonly auth: unknown,
    readonly context: RequestContext,
  ) {}

  get request(): Request {
    return this.context.request;
  }
}

type AnyHandler = (input: OperationInput<RouteSpec, unknown>) => Response | Promise<Response>;

/** Registers every operation of `routes` under every prefix. */
export function mountRoutes<T extends Record<string, RouteSpec>, A = undefined>(
  pipeline: Pipeline,
  routes: T,
  handlers: Handlers<T, A>,
  options: MountOptions<A>,
  prepared: PreparedAnswers<T> = {},
): void {
  const format = options.errorFormat ?? errorResponse;
  if (options.authorize && Object.keys(prepared).length > 0) {
    throw new Error("prepared answers are for mounts without authorize");
  }
  for (const [operationId, route] of Object.entries(routes)) {
    const handler = handlers[operationId as keyof T] as unknown as AnyHandler;
    const preparedAnswer = prepared[operationId as keyof T] as
      | ((context: RequestContext) => Response | undefined)
      | undefined;
    const needsKey = route.auth || options.readsRequireKey === true;
    // Without a query string the query always validates alike: once, here, if it may be absent.
    const noQuery = v.safeParse(route.query, {});
    const queryIn = (search: string) =>
      search.length <= 1 && noQuery.success
        ? { ...noQuery.output as Record<string, unknown> }
        : validate(route.query, queryOf(search), "query");
    const input = (context: RequestContext, auth: unknown) => {
      const params = validate(route.params, context.params, "path");
      const query = queryIn(context.search);
      if (route.body.kind === "json") {
        const spec = route.body;
        const { request } = context;
        return readJson(request, spec.contentTypes, spec.untyped).then((json) => {
          if (typeof json !== "object" || json === null || Array.isArray(json)) {
            throw new Invalid("body must be a JSON object");
          }
          const body = validate(spec.schema, json, "body");
          return handler({ params, query, body, auth, request, context });
        });
      }
      if (route.body.kind === "stream") {
        requireContentType(context.request, route.body.contentTypes);
      }
      return handler(new BodilessInput(params, query, auth, context));
    };
    const respond = (context: RequestContext): Response | Promise<Response> => {
      if (options.authorize) {
        const auth = options.authorize(context, needsKey);
        return auth instanceof Promise ? auth.then((a) => input(context, a)) : input(context, auth);
      }
      if (needsKey && !context.apiKeyGranted) {
        requireApiKeyIn(context.header("authorization"), options.apiKey, options.wrongKeyStatus);
      }
      return preparedAnswer?.(context) ?? input(context, undefined);
    };
    const failed = (error: unknown, request: Request) =>
      responseForError(error, request, format, options.statusOverrides);
    const step = (context: RequestContext): Response | Promise<Response> => {
      try {
        const answer = respond(context);
        return answer instanceof Promise
          ? answer.catch((error) => failed(error, context.request))
          : answer;
      } catch (error) {
        return failed(error, context.request);
      }
    };
    for (const prefix of options.prefixes) {
      pipeline.route(route.method, prefix + route.path, step, {
        errorFormat: format,
        local: options.local,
      });
    }
  }
}
