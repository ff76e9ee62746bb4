/**
 * The JSON messages of the node connection (spec/hub.yaml) and of the container channel
 * (spec/mcm.yaml), validated by type: each side accepts only what the other may send.
 *
 * @module
 */
import * as v from "valibot";
import {
  AbortMessageSchema,
  ChallengeMessageSchema,
  CreditMessageSchema,
  EndMessageSchema,
  HelloMessageSchema,
  ListedMessageSchema,
  ListMessageSchema,
  PingMessageSchema,
  RefusedMessageSchema,
  UpdateMessageSchema,
  WelcomeMessageSchema,
} from "../../gen/hub/validators.ts";

/** The flow-control and keepalive messages both sides of a mux may send. */
export const MUX = {
  credit: CreditMessageSchema,
  end: EndMessageSchema,
  abort: AbortMessageSchema,
  ping: PingMessageSchema,
  pong: PingMessageSchema,
};

/** The keepalive messages of the node connection (its tunnel travels in ./wire_frames.ts). */
const KEEPALIVE = { ping: PingMessageSchema, pong: PingMessageSchema };

/** The text messages a node may send to its hub. */
export const FROM_NODE = {
  ...KEEPALIVE,
  hello: HelloMessageSchema,
  update: UpdateMessageSchema,
  list: ListMessageSchema,
};

/** The text messages a hub may send to a node. */
export const FROM_HUB = {
  ...KEEPALIVE,
  challenge: ChallengeMessageSchema,
  welcome: WelcomeMessageSchema,
  refused: RefusedMessageSchema,
  listed: ListedMessageSchema,
};

type Schemas = Record<string, v.GenericSchema>;

/** One message of a side, typed by its schemas. */
export type MessageOf<S extends Schemas> = { [K in keyof S]: v.InferOutput<S[K]> }[keyof S];

/** A message that is not JSON, of an unknown type, or malformed. */
export class MessageError extends Error {
  override name = "MessageError";
}

/** Parses and validates a text frame against the messages one side may receive. */
export function parseMessage<S extends Schemas>(text: string, schemas: S): MessageOf<S> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new MessageError("a message is not JSON");
  }
  const type = (parsed as { t?: unknown })?.t;
  const schema = typeof type === "string" && Object.hasOwn(schemas, type)
    ? schemas[type]
    : undefined;
  if (!schema) throw new MessageError(`unexpected message type ${JSON.stringify(type)}`);
  const result = v.safeParse(schema, parsed);
  if (!result.success) {
    const issue = result.issues[0];
    const where = (issue.path ?? []).map((p) => p.key).join(".");
    throw new MessageError(`malformed '${type}' message: ${where} ${issue.message}`);
  }
  return result.output as MessageOf<S>;
}
