/**
 * The messages of a model load as the reference streams them (`PUT /models {action: "load"}` of
 * the registry, and `POST /models` of the older OpenAI-path API): `{ progress: "<|loading_model|>
 * N%<br />" }` at each whole percent, then `{ id, object: "model", kind, loaded: true }`, or a
 * last `{ error: { code, message } }`.
 *
 * @module
 */
import { DomainError } from "../errors/mod.ts";
import { HTTP_STATUS_OF } from "../http/error_statuses.ts";
import type { InferenceService } from "./inference_service.ts";

/** A message of a load's stream. */
export type LoadMessage =
  | { progress: string }
  | { id: string; object: "model"; kind: string; loaded: true }
  | { error: { code: number; message: string } };

/** Loads `id` (already checked) and streams its progress; a client that goes does not stop it. */
export function loadMessages(service: InferenceService, id: string): ReadableStream<LoadMessage> {
  return new ReadableStream<LoadMessage>({
    start(controller) {
      let percent = -1;
      const send = (message: LoadMessage) => {
        try {
          controller.enqueue(message);
        } catch { /* the client went; the load goes on */ }
      };
      service.load(id, (progress) => {
        const now = Math.floor(progress * 100);
        if (now <= percent) return;
        percent = now;
        send({ progress: `<|loading_model|> ${now}%<br />` });
      }).then(
        (slot) => send({ id, object: "model", kind: slot.kind, loaded: true }),
        (error) => {
          if (!(error instanceof DomainError)) console.error(`loading ${id} failed:`, error);
          const code = error instanceof DomainError ? HTTP_STATUS_OF[error.kind] : 500;
          send({ error: { code, message: (error as Error).message } });
        },
      ).finally(() => {
        try {
          controller.close();
        } catch { /* cancelled */ }
      });
    },
  });
}
