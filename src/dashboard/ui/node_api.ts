/**
 * The page's link to its node: the node's own origin, the API key kept in this tab's
 * sessionStorage, and the SDK's clients bound to both.
 *
 * @module
 */
import {
  insightClient,
  mcmClient,
  type NodeConnection,
  PREFIXES,
  storeClient,
} from "../../sdk/clients.ts";

const KEY_ITEM = "edgenode.apiKey";

/** The API key entered in this tab, if any. */
export function storedKey(): string | undefined {
  return sessionStorage.getItem(KEY_ITEM) ?? undefined;
}

/** Keeps the key for this tab (until it closes), or forgets it. */
export function storeKey(key: string | undefined): void {
  if (key) sessionStorage.setItem(KEY_ITEM, key);
  else sessionStorage.removeItem(KEY_ITEM);
}

/** This node, with the key if one was entered. */
export function connection(): NodeConnection {
  return { url: location.origin, credential: storedKey() };
}

/** The SDK's clients of this node. */
export function clients() {
  const node = connection();
  return { store: storeClient(node), mcm: mcmClient(node), insight: insightClient(node) };
}

/** The message of an error answer (any service's shape), or the error itself. */
export function messageOf(error: unknown): string {
  const body = error as { error?: { message?: string }; message?: string } | undefined;
  return body?.error?.message ?? body?.message ?? String(error);
}

/**
 * Uploads a file into a model with progress (POST /models/{id}/upload). XMLHttpRequest, because
 * fetch reports no upload progress; the answer is the Model or an error message.
 */
export function uploadModelFile(
  id: string,
  file: Blob,
  onProgress: (sent: number, total: number) => void,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", `${PREFIXES.store}/models/${encodeURIComponent(id)}/upload`);
    request.setRequestHeader("Content-Type", "application/octet-stream");
    const key = storedKey();
    if (key) request.setRequestHeader("Authorization", `Bearer ${key}`);
    request.upload.onprogress = (event) => onProgress(event.loaded, event.total || file.size);
    request.onload = () => {
      const body = JSON.parse(request.responseText || "null");
      if (request.status >= 200 && request.status < 300) resolve(body);
      else reject(new Error(messageOf(body) || `upload failed (${request.status})`));
    };
    request.onerror = () => reject(new Error("the upload was cut off"));
    request.send(file);
  });
}
