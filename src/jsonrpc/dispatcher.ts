/**
 * A JSON-RPC 2.0 endpoint over HTTP, from a generated method table: envelope.ts checks each
 * request strictly, json-rpc-2.0 dispatches the valid ones (method lookup, standard errors), and
 * this binds positional or by-name params to the table's parameters and validates them before a
 * handler runs.
 *
 * @module
 */
import { JSONRPCErrorException, type JSONRPCRequest, JSONRPCServer } from "json-rpc-2.0";
import * as v from "valibot";
import { json } from "../http/reply.ts";
import { readText } from "../streams/mod.ts";
import {
  isAnswer,
  PARSE_ERROR,
  readEnvelope,
  type RpcErrorAnswer,
  type RpcRequest,
} from "./envelope.ts";
import { INVALID_PARAMS } from "./error_codes.ts";

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

/**
 * Builds the HTTP handler of a JSON-RPC endpoint. `mapError` turns an error a handler throws
 * into a JSON-RPC error, or returns undefined for an unexpected one (logged; -32603).
 */
export function jsonRpcEndpoint<T extends Record<string, MethodSpec>>(
  methods: T,
  handlers: MethodHandlers<T>,
  mapError: (error: unknown) => JSONRPCErrorException | undefined,
): (request: Request) => Promise<Response> {
  const server = new JSONRPCServer({ errorListener: () => {} });
  for (const [name, spec] of Object.entries(methods)) {
    const handler = handlers[name] as (params: Record<string, unknown>) => unknown;
    server.addMethod(name, async (given: unknown) => {
      const params = bindParams(name, spec, given);
      try {
        return await handler(params);
      } catch (error) {
        const mapped = mapError(error);
        if (mapped) throw mapped;
        const id = crypto.randomUUID();
        console.error(`[${id}] JSON-RPC ${name} failed:`, error);
        throw new JSONRPCErrorException(`Internal error (logged as ${id})`, -32603);
      }
    });
  }
  const answer = (item: RpcRequest | RpcErrorAnswer) =>
    isAnswer(item) ? item : server.receive(item as JSONRPCRequest);
  return async (request) => {
    const text = await readText(request, MAX_BODY_BYTES, "JSON-RPC request");
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
