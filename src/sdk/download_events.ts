/**
 * The Server-Sent Events of a model download (POST /models/{id}/download), parsed and checked
 * against spec/store.yaml's message schemas.
 *
 * @module
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import * as v from "valibot";
import {
  DownloadDoneSchema,
  DownloadProgressSchema,
  ErrorSchema,
  MmprojProgressSchema,
} from "../../gen/store/validators.ts";

const MessageSchema = v.union([
  DownloadProgressSchema,
  MmprojProgressSchema,
  DownloadDoneSchema,
  ErrorSchema,
]);
/** One message of a download stream: progress, projector progress, done, or an error. */
export type DownloadMessage = v.InferOutput<typeof MessageSchema>;

/** The messages of a download's event stream, as they arrive. */
export async function* downloadEvents(response: Response): AsyncGenerator<DownloadMessage> {
  if (!response.body) return;
  const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
  for await (const event of events) {
    yield v.parse(MessageSchema, JSON.parse(event.data));
  }
}
