/**
 * A JSON-RPC 2.0 endpoint over HTTP, from a generated method table: envelope.ts checks each
 * request strictly, json-rpc-2.0 dispatches the valid ones (method lookup, standard errors), and
 * this binds positional or by-name params to the table's parameters and validates them before a
 * handler runs. A single call of a known method, the common case, is answered directly
 * (single_call.ts): synchronously when its handler is, with the bytes the library would send.
 *
 * @module
 */
import {
  createJSONRPCErrorResponse,
  createJSONRPCSuccessResponse,
  JSONRPCErrorException,
  type JSONRPCRequest,
  JSONRPCServer,
} from "json-rpc-2.0";
import * as v from "valibot";
import { json, type JsonText, jsonText } from "../http/reply.ts";
import { readText } from "../streams/mod.ts";
import {
  isAnswer,
  PARSE_ERROR,
  readEnvelope,
  type RpcErrorAnswer,
  type RpcRequest,
} from "./envelope.ts";
import { INVALID_PARAMS } from "./error_codes.ts";
import { singleCall } from "./single_call.ts";

/** One generated method table entry. */
export interface MethodSpec {
  readonly params: readonly {
    readonly name: string;
    readonly required: boolean;
    readonly schema: v.GenericSchema;
  }[];
  readonly result: v.GenericSchema;
}

type ParamsOf<M extends MethodSpec> = {
  [P in M["params"][number] as P["name"]]: v.InferOutput<P["schema"]>;
};

/** One handler per method of a table; a missing one is a type error. */
export type MethodHandlers<T extends Record<string, MethodSpec>> = {
  [K in keyof T]: (
    params: ParamsOf<T[K]>,
  ) => v.InferOutput<T[K]["result"]> | Promise<v.InferOutput<T[K]["result"]>>;
};

/** Largest request body (a batch included). */
const MAX_BODY_BYTES = 1 << 20;

const invalidParams = (message: string) => new JSONRPCErrorException(message, INVALID_PARAMS);

/** Binds positional or by-name params to the method's table; exported for its unit test. */
export function bindParams(
  method: string,
  spec: MethodSpec,
  given: unknown,
): Record<string, unknown> {
  if (given === undefined || given === null) given = [];
  // Real clients send `[""]` to methods without params: positional extras are ignored there.
  if (spec.params.length === 0 && Array.isArray(given)) return {};
  let named: Record<string, unknown>;
  if (Array.isArray(given)) {
    if (given.length > spec.params.length) {
      throw invalidParams(`${method} takes at most ${spec.params.length} params`);
    }
    named = Object.fromEntries(given.map((value, i) => [spec.params[i].name, value]));
  } else if (typeof given === "object") {
    named = given as Record<string, unknown>;
    const unknown = Object.keys(named).filter((k) => !spec.params.some((p) => p.name === k));
    if (unknown.length > 0) throw invalidParams(`${method} has no param '${unknown[0]}'`);
  } else {
    throw invalidParams("params must be an array or an object");
  }
  const bound: Record<string, unknown> = {};
  for (const param of spec.params) {
    const value = named[param.name];
    if (value === undefined) {
      if (param.required) throw invalidParams(`missing param '${param.name}'`);
      continue;
    }
    const result = v.safeParse(param.schema, value);
    if (!result.success) {
      throw invalidParams(`param '${param.name}' ${result.issues[0].message}`);
    }
    bound[param.name] = result.output;
  }
  return bound;
}

/** How an endpoint answers. */
export interface EndpointOptions {
  /**
   * Whether a single call is answered directly (single_call.ts) rather than through json-rpc-2.0;
   * true by default. Off, every body takes the library's path: for tests that compare the two.
   */
  directCalls?: boolean;
}

/**
 * Builds the HTTP handler of a JSON-RPC endpoint. `mapError` turns an error a handler throws
 * into a JSON-RPC error, or returns undefined for an unexpected one (logged; -32603).
 */
export function jsonRpcEndpoint<T extends Record<string, MethodSpec>>(
  methods: T,
  handlers: MethodHandlers<T>,
  mapError: (error: unknown) => JSONRPCErrorException | undefined,
  { directCalls = true }: EndpointOptions = {},
): (request: Request) => Promise<Response> {
  const call = methodCaller(methods, handlers, mapError);
  const server = new JSONRPCServer({ errorListener: () => {} });
  for (const name of call.names) server.addMethod(name, async (given) => await call(name, given));
  const answer = (item: RpcRequest | RpcErrorAnswer) =>
    isAnswer(item) ? item : server.receive(item as JSONRPCRequest);
  return async (request) => {
    const text = await readText(request, MAX_BODY_BYTES, "JSON-RPC request");
    const single = directCalls ? singleCall(text, call.names) : undefined;
    if (single) {
      // What json-rpc-2.0 answers for a call, without its promises where the handler has none.
      let result: unknown;
      try {
        result = call(single.method, single.params);
      } catch (error) {
        return json(200, failureAnswer(single.id, error));
      }
      if (result instanceof Promise) {
        result = await result.catch((error) => new CallFailure(error));
        if (result instanceof CallFailure) return json(200, failureAnswer(single.id, result.error));
      }
      return jsonText(200, successText(single.id, result));
    }
    const envelope = readEnvelope(text);
    if (!envelope) {
      return json(200, {
        jsonrpc: "2.0",
        id: null,
        error: { code: PARSE_ERROR, message: "Parse error: the body is not JSON" },
      });
    }
    if (envelope.kind === "single") return json(200, await answer(envelope.item));
    return json(200, await Promise.all(envelope.items.map(answer)));
  };
}

/** The JSON text of each result a handler prepared (see `preparedResult`). */
const preparedTexts = new WeakMap<object, string>();

/**
 * Freezes `result` (deeply) and keeps its JSON text: a handler that returns the same object again
 * (getMe, until the identity changes) is answered without serializing it again.
 */
export function preparedResult<R extends object>(result: R): R {
  deepFreeze(result);
  preparedTexts.set(result, JSON.stringify(result));
  return result;
}

function deepFreeze(value: object): void {
  Object.freeze(value);
  for (const member of Object.values(value)) {
    if (typeof member === "object" && member !== null) deepFreeze(member);
  }
}

/** The JSON text of json-rpc-2.0's success answer (createJSONRPCSuccessResponse). */
function successText(id: string | number | null, result: unknown): JsonText<unknown> {
  const prepared = typeof result === "object" && result !== null
    ? preparedTexts.get(result)
    : undefined;
  const text = prepared === undefined
    ? JSON.stringify(createJSONRPCSuccessResponse(id, result))
    : `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${prepared}}`;
  return text as JsonText<unknown>;
}

/** A rejection kept as a value, so the awaiting code needs no second try block. */
class CallFailure {
  constructor(readonly error: unknown) {}
}

/** The error answer json-rpc-2.0 makes of what a method threw (its default mapping). */
function failureAnswer(id: string | number | null, error: unknown) {
  const message = (error as { message?: string } | null)?.message ?? "An unexpected error occurred";
  return error instanceof JSONRPCErrorException
    ? createJSONRPCErrorResponse(id, error.code, message, error.data)
    : createJSONRPCErrorResponse(id, 0, message);
}

/**
 * Calls a method of the table: params bound and validated (a JSONRPCErrorException, thrown),
 * then its handler, whose errors become JSON-RPC errors by `mapError` (thrown, or the promise
 * rejected with them); an unexpected one is logged under an id and answered -32603.
 */
function methodCaller<T extends Record<string, MethodSpec>>(
  methods: T,
  handlers: MethodHandlers<T>,
  mapError: (error: unknown) => JSONRPCErrorException | undefined,
): ((name: string, given: unknown) => unknown) & { names: ReadonlySet<string> } {
  const failure = (name: string, error: unknown): JSONRPCErrorException => {
    const mapped = mapError(error);
    if (mapped) return mapped;
    const id = crypto.randomUUID();
    console.error(`[${id}] JSON-RPC ${name} failed:`, error);
    return new JSONRPCErrorException(`Internal error (logged as ${id})`, -32603);
  };
  const call = (name: string, given: unknown): unknown => {
    const spec = methods[name];
    const handler = handlers[name] as (params: Record<string, unknown>) => unknown;
    const params = bindParams(name, spec, given);
    let result: unknown;
    try {
      result = handler(params);
    } catch (error) {
      throw failure(name, error);
    }
    return result instanceof Promise
      ? result.catch((error) => {
        throw failure(name, error);
      })
      : result;
  };
  return Object.assign(call, { names: new Set(Object.keys(methods)) });
}
