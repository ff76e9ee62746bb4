/**
 * A model load as the reference streams it (`PUT /models {action: "load"}` of the registry, and
 * `POST /models` of the older OpenAI-path API): `{ progress: "<|loading_model|> N%<br />" }` at
 * each whole percent, then `{ id, object: "model", kind, loaded: true }`, or a last failure that
 * the edge shapes as `{ error: { code, message } }` (src/http/sse.ts). While the engine installs
 * first (install_progress.ts), `{ progress: "<|installing_engine|> installing the cuda engine
 * 48/143 MB<br />" }`: no percent in it, so a client that reads the load's percent skips it.
 *
 * @module
 */
import type { LoadEvent, ModelLoading } from "../store/model_loading.ts";
import type { InferenceService } from "./inference_service.ts";
import { watchInstall } from "./engine_status.ts";
import { installingEngineProgress } from "./install_words.ts";

/** Loads `id` (already checked) and streams its progress; a client that goes does not stop it. */
function loadMessages(service: InferenceService, id: string): ReadableStream<LoadEvent> {
  return new ReadableStream<LoadEvent>({
    start(controller) {
      let percent = -1;
      const send = (message: LoadEvent) => {
        try {
          controller.enqueue(message);
        } catch { /* the client went; the load goes on */ }
      };
      let installing = "";
      const unwatch = watchInstall((progress) => {
        const text = installingEngineProgress(progress);
        if (text === installing) return;
        installing = text;
        send({ progress: text });
      });
      service.load(id, (progress) => {
        const now = Math.floor(progress * 100);
        if (now <= percent) return;
        percent = now;
        send({ progress: `<|loading_model|> ${now}%<br />` });
      }).then(
        (slot) => send({ id, object: "model", kind: slot.kind, loaded: true }),
        (error) => send({ failed: error }),
      ).finally(() => {
        unwatch();
        try {
          controller.close();
        } catch { /* cancelled */ }
      });
    },
  });
}

/** The registry's `PUT /models` load and unload actions, served by `service`. */
export function modelLoading(service: InferenceService): ModelLoading {
  return {
    load(id) {
      service.check(id);
      return loadMessages(service, id);
    },
    async unload(id) {
      const model = service.check(id);
      await service.unload(id);
      return { id, object: "model", kind: model.kind, loaded: false };
    },
  };
}
