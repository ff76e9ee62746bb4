/**
 * The Server-Sent Events of a model download (POST /models/{id}/download), parsed and checked
 * against spec/store.yaml's message schemas.
 *
 * @module
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import * as v from "valibot";
import {
  type DownloadDone,
  DownloadDoneSchema,
  type DownloadProgress,
  DownloadProgressSchema,
  type Error as ErrorBody,
  ErrorSchema,
  type MmprojProgress,
  MmprojProgressSchema,
} from "../../gen/store/validators.ts";

const MessageSchema = v.union([
  DownloadProgressSchema,
  MmprojProgressSchema,
  DownloadDoneSchema,
  ErrorSchema,
]);

/**
 * One message of a download stream: progress, projector progress, done, or an error.
 *
 * @internal A union of spec/store.yaml's schemas, as gen/store/validators.ts types them.
 */
export type DownloadMessage = DownloadProgress | MmprojProgress | DownloadDone | ErrorBody;

/** The messages of a download's event stream, as they arrive. */
export async function* downloadEvents(response: Response): AsyncGenerator<DownloadMessage> {
  if (!response.body) return;
  const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
  for await (const event of events) {
    yield v.parse(MessageSchema, JSON.parse(event.data)) satisfies DownloadMessage;
  }
}
